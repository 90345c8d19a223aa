// The data directory's lock when the pid in it is ours: a live thread of this process holds it, or an
// earlier process that had our pid left it (pids are reused, quickly on Windows). Each case runs in a child
// process (test/helpers/lock-child.ts), with /proc (Linux) or without it (as on macOS and Windows: no
// process start time to tell the two apart, only the process nonce).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { processNonce } from '../../src/platform/process-nonce';
import { tempDir } from '../helpers/temp';

const CHILD = join(__dirname, '..', 'helpers', 'lock-child.ts');
const PROC_MODES = ['with-proc', 'no-proc'] as const;

async function child(scenario: string, procMode: (typeof PROC_MODES)[number], lock?: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { dir, cleanup } = await tempDir('ra-lock-threads-');
  try {
    const args = ['--import', 'tsx', CHILD, scenario, dir, procMode, ...(lock ? [JSON.stringify(lock)] : [])];
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, args, { timeout: 60_000 }, (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${out}${errOut}`)) : resolve(out))),
    );
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  } finally {
    await cleanup();
  }
}

for (const procMode of PROC_MODES) {
  test(`attack (${procMode}): a lock of an earlier process that had our pid and held it on a thread (another thread id, a nonce not ours) is taken over as stale, not waited for forever`, async () => {
    const { outcome } = await child('lock', procMode, { pid: 'self', thread: 1, process_nonce: `${process.pid}.${'0'.repeat(32)}` });
    assert.equal(outcome, 'ACQUIRED');
  });

  test(`(${procMode}) a live worker thread of this process holding the lock: refused; releaseEndedThreadLock lets go of it only once that thread has ended, and only for that thread`, async () => {
    const seen = await child('thread', procMode);
    assert.equal(seen.writtenByHolder, true, "the worker's lock carries its thread and this process's nonce");
    assert.match(String(seen.whileHeld), /^refused: data directory .* is in use by process \d+$/, JSON.stringify(seen));
    assert.equal(seen.afterOtherRelease, true, 'another thread id: the lock is left alone');
    assert.equal(seen.afterEnd, true, 'the thread ended without its exit hook: its lock is still there');
    assert.equal(seen.afterRelease, false, 'let go of once its thread has ended');
    assert.equal(seen.thenAcquire, 'ACQUIRED');
  });

  test(`(${procMode}) another live process's lock is refused whatever its nonce says`, async () => {
    // This test's process is alive; the child is not it.
    for (const nonce of [undefined, `${process.pid}.${'0'.repeat(32)}`, processNonce()]) {
      const { outcome } = await child('lock', procMode, { pid: process.pid, thread: 1, ...(nonce ? { process_nonce: nonce } : {}) });
      assert.match(String(outcome), new RegExp(`^refused: .* in use by process ${process.pid}$`), `nonce ${nonce}`);
    }
  });
}

test('a lock of the previous version (no nonce) is read as before: without /proc, our pid and another thread is held', async () => {
  const { outcome } = await child('lock', 'no-proc', { pid: 'self', thread: 1 });
  assert.match(String(outcome), /^refused: .* in use by process \d+$/);
});

test('a lock of the previous version (no nonce) is read as before: with /proc, held if its process_start is ours, stale if it is not', async () => {
  assert.match(String((await child('lock', 'with-proc', { pid: 'self', thread: 1, process_start: 'self' })).outcome), /^refused: .* in use/);
  assert.equal((await child('lock', 'with-proc', { pid: 'self', thread: 1, process_start: '1' })).outcome, 'ACQUIRED');
});

test("the process nonce: a child process makes its own (never its parent's); the worker threads started after the main thread made it share it; one started before has none", async () => {
  const seen = await child('nonce', 'with-proc');
  assert.equal(seen.inherited, processNonce(), 'the child inherited this process nonce in its env');
  assert.match(String(seen.main), new RegExp(`^${String(seen.pid)}\\.[0-9a-f]{32}$`));
  assert.notEqual(seen.main, seen.inherited);
  assert.equal(seen.lateWorker, seen.main);
  assert.equal(seen.earlyWorker, null, "its parent's nonce is not the worker's");
});
