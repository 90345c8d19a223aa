// The editor's service thread (dist/service-thread.js, src/service-thread/thread-loader.ts) runs its bundle
// with a V8 code cache of this machine's own, written beside the bundle (the extension's dist/cache/) once
// the first start's warm-up is over. A damaged cache must cost only the compile, never the start. The built
// files copied into a folder of the test's own (the installed extension's), a real worker thread, a temp data
// directory, the service listening on loopback. Needs `npm run build`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cp, mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { CLI } from '../helpers/cli';
import { TEST_TOKEN } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import type { FromThread, ThreadStart } from '../../src/service-thread/wire';

/** One start of the built thread: listening on loopback, its store open (/health), then stopped. */
async function startAndStop(extensionDist: string, dataDir: string, settle: () => Promise<unknown>): Promise<void> {
  const start: ThreadStart = { dataDir, port: 0, host: '127.0.0.1', toolSources: [], laterToolSources: [], languageModels: false, terminal: false, mirrors: { apiKeys: [] } };
  const worker = new Worker(join(extensionDist, 'service-thread.js'));
  worker.postMessage({ t: 'boot', start });
  const next = (t: FromThread['t']) =>
    new Promise<FromThread>((resolve, reject) => {
      const on = (message: FromThread) => {
        if (message.t === 'begin-failed' || message.t === 'start-failed') reject(new Error(JSON.stringify(message)));
        if (message.t !== t) return;
        worker.off('message', on);
        resolve(message);
      };
      worker.on('message', on);
      worker.once('error', reject);
    });
  try {
    await next('begun');
    worker.postMessage({ t: 'host-ready' });
    const started = next('started');
    worker.postMessage({ t: 'start' });
    const { address } = (await started) as Extract<FromThread, { t: 'started' }>;
    // 503 while the store opens, then 200.
    await waitFor(async () => (await fetch(`http://127.0.0.1:${address.port}/health`)).status === 200, 'the service to answer /health', 30_000);
    await settle();
    const stopped = next('stopped');
    worker.postMessage({ t: 'stop' });
    await stopped;
  } finally {
    await worker.terminate();
  }
}

test("the service thread writes its code cache after the first start's warm-up, and a damaged cache only costs the compile", async (t) => {
  const data = await tempDir('ra-thread-cache-');
  t.after(data.cleanup);
  await writeFile(join(data.dir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN }));
  // The installed extension's dist/ (its own: the suite's dist/ is shared by other tests' threads).
  const dist = join(data.dir, 'extension', 'dist');
  await cp(join(CLI, '..'), dist, { recursive: true, filter: (from) => !from.endsWith('.map') && !from.endsWith(join('dist', 'cache')) });
  const cacheDir = join(dist, 'cache');
  const cacheFile = async () => (await readdir(cacheDir).catch(() => [] as string[])).map((name) => join(cacheDir, name));

  // Caches no start reads: another V8's beside the bundle (the editor updated in place, two months ago), and
  // the data directory's of s26-s27. Both go after the warm-up (stale-caches.ts).
  await mkdir(cacheDir);
  await writeFile(join(cacheDir, 'service-thread-0.0.0-older.code'), 'an older V8');
  const monthsAgo = (Date.now() - 60 * 24 * 60 * 60 * 1000) / 1000;
  await utimes(join(cacheDir, 'service-thread-0.0.0-older.code'), monthsAgo, monthsAgo);
  await mkdir(join(data.dir, 'cache'));
  await writeFile(join(data.dir, 'cache', `service-thread-${process.versions.v8}.code`), 'the data directory of s27');
  const current = `service-thread-${process.versions.v8}.code`;

  // First start: no cache; one is written once the warm-up is over (it runs after listening).
  await startAndStop(dist, data.dir, () =>
    waitFor(async () => (await readdir(cacheDir)).join() === current && !(await readdir(data.dir)).includes('cache'), 'the code cache to be written and the stale ones removed', 30_000),
  );
  const [file] = await cacheFile();
  assert.match(file!, /service-thread-.+\.code$/);
  const written = await readFile(file!);
  assert.ok(written.length > 100_000, `a cache of the compiled bundle (${written.length} bytes)`);

  // Damaged past its stamp (V8 refuses it): the thread starts all the same, and writes a good one again.
  const damaged = Buffer.from(written);
  damaged.fill(0x5a, 16, 4_096);
  await writeFile(file!, damaged);
  await startAndStop(dist, data.dir, () => waitFor(async () => !(await readFile(file!)).equals(damaged), 'the damaged cache to be written again', 30_000));
  assert.equal(
    (await readFile(file!)).subarray(16, 4_096).every((byte) => byte === 0x5a),
    false,
  );

  // Bytes flipped through V8's own data, the length and the header kept (a bad disk): V8's release builds do
  // not check that data and ran it, crashing the whole process (the editor's extension host) at every start
  // until the file was deleted (review28b). Refused now, compiled afresh. In a process of its own: a crash
  // would end this one.
  const flipped = Buffer.from(await readFile(file!));
  for (let k = 1; k <= 4; k += 1) for (let i = 0; i < 16; i += 1) flipped[64 + ((k * 7919 + i * 104729) % (flipped.length - 64))] ^= 0xff;
  await writeFile(file!, flipped);
  const start: ThreadStart = { dataDir: data.dir, port: 0, host: '127.0.0.1', toolSources: [], laterToolSources: [], languageModels: false, terminal: false, mirrors: { apiKeys: [] } };
  const script = `
    const { Worker } = require('node:worker_threads');
    const worker = new Worker(${JSON.stringify(join(dist, 'service-thread.js'))});
    worker.postMessage({ t: 'boot', start: ${JSON.stringify(start)} });
    worker.on('message', (m) => { if (m.t === 'begun' || m.t === 'begin-failed') { console.log(m.t); process.exit(0); } });
    worker.on('error', (e) => { console.error(String(e)); process.exit(3); });`;
  const child = spawnSync(process.execPath, ['-e', script], { timeout: 60_000, encoding: 'utf8' });
  assert.equal(child.status, 0, `the thread's process ended with ${child.status ?? child.signal}: ${child.stderr.slice(0, 400)}`);
  assert.equal(child.stdout.trim(), 'begun', child.stderr.slice(0, 400));

  // Cut short (a disk that filled while it was written): read as no cache, the start unharmed.
  await writeFile(file!, written.subarray(0, 10));
  await startAndStop(dist, data.dir, async () => undefined);
});
