// The service's thread started as the extension's bundle loads (src/service-thread/early-thread.ts,
// src/extension/early-start.ts): the window's first hosting takes that very thread (no second one), a later
// hosting (Restart Service) starts its own, and one that nothing takes (autoStart off) is ended, never
// left running. The whole extension with the `vscode` double over the real service on a real thread.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { earlyWaiting, startEarly, takeEarly } from '../../src/service-thread/early-thread';
import { TEST_TOKEN } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { fakeContext, installVscodeDouble, testing } from '../helpers/vscode-double';

installVscodeDouble();
type Extension = typeof import('../../src/extension/extension');
let ext: Extension | undefined;
after(async () => ext?.deactivate());

const workerOf = (api: Awaited<ReturnType<Extension['activate']>>) => (api.hosting.service as unknown as { worker: Worker }).worker;
const exited = (worker: Worker) => new Promise<number>((resolve) => worker.once('exit', resolve));

async function context(): Promise<ReturnType<typeof fakeContext>> {
  const storage = await tempDir('ra-early-');
  after(storage.cleanup);
  await writeFile(join(storage.dir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN, model: 'fake-model' }));
  return fakeContext(storage.dir);
}

describe('the service thread started as the extension loads', () => {
  test('the first hosting takes the thread the load started; Restart Service starts its own', async () => {
    testing.reset();
    testing.settings.set('remoteAssistant.port', 0);
    ext = await import('../../src/extension/extension');
    const early = earlyWaiting();
    assert.ok(early, 'loading the extension (autoStart on by default) started the thread');
    const api = await ext.activate((await context()) as never);
    assert.equal(api.hosting.state.state, 'hosting', JSON.stringify(api.hosting.state));
    assert.equal(workerOf(api), early, 'the hosting runs on the thread started at the load');
    assert.equal(earlyWaiting(), undefined, 'taken: not waiting any more');
    await api.hosting.restart();
    assert.equal(api.hosting.state.state, 'hosting');
    assert.notEqual(workerOf(api), early, 'a restart starts a thread of its own');
    await ext.deactivate();
  });

  test('a thread started ahead that nothing takes (autoStart off) is ended by activate()', async () => {
    testing.reset();
    testing.settings.set('remoteAssistant.autoStart', false);
    startEarly();
    const early = earlyWaiting()!;
    const ended = exited(early);
    ext ??= await import('../../src/extension/extension');
    const api = await ext.activate((await context()) as never);
    assert.equal(api.hosting.service, undefined, 'not hosting');
    await ended;
    assert.equal(earlyWaiting(), undefined);
    await ext.deactivate();
  });

  test('taken once: a second take finds none, and a thread started ahead never holds its process open', async () => {
    startEarly();
    const worker = earlyWaiting()!;
    startEarly();
    assert.equal(earlyWaiting(), worker, 'one thread ahead, not two');
    assert.equal(takeEarly(), worker);
    assert.equal(takeEarly(), undefined);
    await worker.terminate();
  });

  test('a thread started ahead that ended before any hosting took it is not handed over: the hosting starts its own (review28b)', async () => {
    testing.reset();
    testing.settings.set('remoteAssistant.port', 0);
    startEarly();
    const dead = earlyWaiting()!;
    await dead.terminate();
    assert.equal(earlyWaiting(), undefined, 'an ended thread no longer waits');
    ext ??= await import('../../src/extension/extension');
    const api = await ext.activate((await context()) as never);
    assert.equal(api.hosting.state.state, 'hosting', JSON.stringify(api.hosting.state));
    assert.notEqual(workerOf(api), dead);
    await ext.deactivate();
  });

  test('deactivate() ends a thread started ahead that nothing took', async () => {
    startEarly();
    const ended = exited(earlyWaiting()!);
    ext ??= await import('../../src/extension/extension');
    await ext.deactivate();
    await ended;
    assert.equal(earlyWaiting(), undefined);
  });

  test('a thread started ahead and never taken does not keep its process alive', () => {
    // A process that only starts it must end by itself (the thread waits for a `boot` that never comes).
    const script = `require(${JSON.stringify(join(__dirname, '../../src/service-thread/early-thread.ts'))}).startEarly();`;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { timeout: 30_000, encoding: 'utf8' });
    assert.equal(run.signal, null, `still running after 30 s (killed): ${run.stderr}`);
    assert.equal(run.status, 0, run.stderr);
  });
});
