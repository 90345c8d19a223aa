import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A fresh temp directory, removed by the returned cleanup. node:test runs `t.after` hooks in the order
 * they were registered, so a test that registers this cleanup before its store's close removes the
 * folder while a background compaction may still write a file into it: retry on ENOTEMPTY.
 */
export async function tempDir(prefix = 'ra-test-'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 }) };
}

/** Polls `check` until it returns a truthy value or the deadline passes (then throws). */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 5_000, everyMs = 20): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Whether `promise` has settled once the event loop got through its pending work (a few turns of setImmediate). */
export async function settledSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return settled;
}
