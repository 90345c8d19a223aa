// Where a password check's scrypt should run so that a chat meets it least (issue 25's one-address POST
// row): `npx tsx bench/check-placement.ts` (ROUNDS, default 12). Periods of 1.5 s of chat turns on the
// auth bench's service, rotated over the rounds: no derivation; derivations back to back on a worker
// thread at nice 19 (where transport/auth/passwords.ts runs them); derivations back to back in a process
// of its own session whose scheduler autogroup is set to nice 19 (`/proc/self/autogroup`). Printed: the
// median of the rounds' p50, p99 and longest turn, and the derivations each placement got done a period.
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import { openBenchService } from './auth';
import { fmt } from './util';

/** Derivations back to back between `go` and `stop`, which answers how many were done. */
const LOOP = `
const { scryptSync } = require('node:crypto');
let on = false; let n = 0;
const step = () => { if (!on) return; scryptSync('x', 'salt', 32, { N: 16384, r: 8, p: 1, maxmem: 64 << 20 }); n += 1; setImmediate(step); };
const cmd = (c, reply) => { if (c === 'go') { on = true; n = 0; setImmediate(step); } else { on = false; reply(String(n)); } };
`;
const THREAD = `${LOOP}
const { parentPort } = require('node:worker_threads');
try { require('node:os').setPriority(0, 19); } catch {}
parentPort.on('message', (c) => cmd(c, (r) => parentPort.postMessage(r)));`;
const PROC = `${LOOP}
try { require('node:fs').writeFileSync('/proc/self/autogroup', '19'); } catch (e) { console.error('autogroup', e.message); }
try { require('node:os').setPriority(0, 19); } catch {}
require('node:readline').createInterface({ input: process.stdin }).on('line', (c) => cmd(c, (r) => console.log(r)));
console.log('ready');`;

async function main(): Promise<void> {
  const { dir, service } = await openBenchService();
  await service.start();
  const worker = new Worker(THREAD, { eval: true });
  const child = spawn(process.execPath, ['-e', PROC], { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  const lines: ((l: string) => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (l: string) => lines.shift()?.(l));
  await new Promise((r) => lines.push(r));
  const ctl = {
    none: { go: () => undefined, stop: async () => '0' },
    thread: {
      go: () => worker.postMessage('go'),
      stop: () =>
        new Promise<string>((r) => {
          worker.once('message', r);
          worker.postMessage('stop');
        }),
    },
    proc: {
      go: () => child.stdin!.write('go\n'),
      stop: () =>
        new Promise<string>((r) => {
          lines.push(r);
          child.stdin!.write('stop\n');
        }),
    },
  };
  const kinds = ['none', 'thread', 'proc'] as const;
  const res: Record<string, { p50: number[]; p99: number[]; max: number[]; n: number[] }> = {};
  let conversationId: string | undefined;
  const ROUNDS = Number(process.env.ROUNDS ?? 12);
  for (let round = 0; round < ROUNDS; round += 1) {
    for (let i = 0; i < kinds.length; i += 1) {
      const kind = kinds[(i + round) % kinds.length];
      ctl[kind].go();
      const turns: number[] = [];
      const end = performance.now() + 1500;
      while (performance.now() < end) {
        const t0 = performance.now();
        const reply = await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } });
        turns.push(performance.now() - t0);
        conversationId = reply.conversation_id;
      }
      const n = Number(await ctl[kind].stop());
      turns.sort((a, b) => a - b);
      const r = (res[kind] ??= { p50: [], p99: [], max: [], n: [] });
      r.p50.push(turns[Math.floor(turns.length / 2)]);
      r.p99.push(turns[Math.floor(turns.length * 0.99)]);
      r.max.push(turns.at(-1)!);
      r.n.push(n);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const kind of kinds) {
    const r = res[kind];
    console.log(`${kind}: median of rounds' p50 ${fmt(med(r.p50))} p99 ${fmt(med(r.p99))} longest ${fmt(med(r.max))} ms; derivations a period ${fmt(med(r.n), 0)}`);
  }
  await worker.terminate();
  child.kill();
  await service.stop();
  await rm(dir, { recursive: true, force: true });
}
void main();
