// A process that judges the data directory's lock as a start does (test/platform/lock-threads.test.ts), run
// as `node --import tsx lock-child.ts <scenario> <dir> <with-proc|no-proc> [lock JSON]`. `no-proc` hides
// /proc, as on macOS and Windows: no boot id, no process start time. Prints one JSON line of what it saw.
//   lock    writes `lock JSON` as service.lock ("self" for pid / process_start: this process's), then starts
//   thread  a real worker thread of this process takes the lock and ends without its exit hook (a crash)
//   nonce   the process nonce as a worker started before the main thread loaded the module sees it, then
//           the main thread's, then a worker's started after
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { hideProc } from './hide-proc';

const [scenario, dir, procMode, lockJson] = process.argv.slice(2) as [string, string, string, string | undefined];
const lockModule = join(__dirname, '..', '..', 'src', 'platform', 'lock-file.ts');
const nonceModule = join(__dirname, '..', '..', 'src', 'platform', 'process-nonce.ts');
const lockFile = join(dir, 'service.lock');

const WORKER = `
require(${JSON.stringify(require.resolve(['tsx', 'cjs'].join('/')))});
${procMode === 'no-proc' ? `require(${JSON.stringify(join(__dirname, 'hide-proc.ts'))}).hideProc();` : ''}
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  if (workerData.role === 'hold') {
    await require(${JSON.stringify(lockModule)}).acquireLock(workerData.dir, { warn() {} });
    // As a thread that crashed or was terminated: its exit hook does not remove the lock.
    process.removeAllListeners('exit');
    parentPort.postMessage('held');
    // Alive until terminated.
    setInterval(() => {}, 1 << 30);
  } else {
    parentPort.postMessage(require(${JSON.stringify(nonceModule)}).processNonce());
  }
})();
`;

function startWorker(role: 'hold' | 'nonce'): Promise<{ worker: Worker; said: unknown }> {
  const worker = new Worker(WORKER, { eval: true, workerData: { role, dir } });
  return new Promise((resolve, reject) => {
    worker.once('message', (said) => resolve({ worker, said }));
    worker.once('error', reject);
  });
}

async function attempt(): Promise<string> {
  const { acquireLock } = (await import(lockModule)) as typeof import('../../src/platform/lock-file');
  try {
    const lock = await acquireLock(dir, { warn() {} });
    await lock.release();
    return 'ACQUIRED';
  } catch (err) {
    return `refused: ${(err as Error).message}`;
  }
}

/** This process's start time as /proc/self/stat says it (the lock module's reading). */
function ownStart(): string {
  const stat = readFileSync('/proc/self/stat', 'latin1');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

async function main(): Promise<unknown> {
  if (procMode === 'no-proc') hideProc();
  if (scenario === 'lock') {
    const lock = JSON.parse(lockJson!) as Record<string, unknown>;
    if (lock.pid === 'self') lock.pid = process.pid;
    if (lock.process_start === 'self') lock.process_start = ownStart();
    writeFileSync(lockFile, JSON.stringify({ hostname: hostname(), started_at: new Date().toISOString(), ...lock }));
    return { outcome: await attempt() };
  }
  if (scenario === 'thread') {
    const { releaseEndedThreadLock } = (await import(lockModule)) as typeof import('../../src/platform/lock-file');
    const { worker } = await startWorker('hold');
    const holder = worker.threadId;
    const { processNonce } = (await import(nonceModule)) as typeof import('../../src/platform/process-nonce');
    const written = JSON.parse(readFileSync(lockFile, 'utf8')) as { thread?: number; process_nonce?: string };
    const writtenByHolder = written.thread === holder && written.process_nonce === processNonce();
    const whileHeld = await attempt();
    // Not the holder's thread: left alone.
    await releaseEndedThreadLock(dir, holder + 1);
    const afterOtherRelease = existsSync(lockFile);
    await worker.terminate();
    const afterEnd = existsSync(lockFile);
    await releaseEndedThreadLock(dir, holder);
    return { writtenByHolder, whileHeld, afterOtherRelease, afterEnd, afterRelease: existsSync(lockFile), thenAcquire: await attempt() };
  }
  if (scenario === 'nonce') {
    const inherited = process.env.REMOTE_ASSISTANT_PROCESS_NONCE ?? null;
    const early = await startWorker('nonce');
    await early.worker.terminate();
    const { processNonce } = (await import(nonceModule)) as typeof import('../../src/platform/process-nonce');
    const late = await startWorker('nonce');
    await late.worker.terminate();
    return { pid: process.pid, inherited, earlyWorker: early.said, main: processNonce(), lateWorker: late.said };
  }
  throw new Error(`unknown scenario ${scenario}`);
}

main().then(
  (seen) => console.log(JSON.stringify(seen)),
  (err: Error) => {
    console.log(JSON.stringify({ error: err.stack ?? String(err) }));
    process.exitCode = 1;
  },
);
