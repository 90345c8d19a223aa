// The service thread's code caches no start reads any more are removed after its warm-up
// (src/service-thread/stale-caches.ts): other V8 versions' beside the bundle, crashed writers' partial files,
// and the data directory's cache/ of s26-s27. Nothing else in those folders is touched. Real files in a temp
// directory.
import assert from 'node:assert/strict';
import { mkdir, readdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { PARTIAL_AGE_MS, removeStaleCaches } from '../../src/service-thread/stale-caches';
import { tempDir } from '../helpers/temp';

const names = async (dir: string) => (await readdir(dir)).sort();

test("beside the bundle: other V8 versions' caches and old partial files go, the current cache and anything else stay", async (t) => {
  const { dir, cleanup } = await tempDir('ra-stale-caches-');
  t.after(cleanup);
  const current = 'service-thread-11.3.244.8-node.29.code';
  for (const name of [
    current,
    'service-thread-10.2.154.26-node.26.code',
    'service-thread-11.3.244.8-node.29.code.4242.partial',
    'service-thread-9.code.77.partial',
    'notes.txt',
    'service-thread-main.js',
  ]) {
    await writeFile(join(dir, name), 'x');
  }
  // A partial file of a writer that may still run (fresh) is left; one an hour old is a crashed writer's.
  const old = (Date.now() - PARTIAL_AGE_MS - 60_000) / 1000;
  await utimes(join(dir, 'service-thread-9.code.77.partial'), old, old);

  const removed = await removeStaleCaches(dir, current);
  assert.deepEqual(removed.sort(), ['service-thread-10.2.154.26-node.26.code', 'service-thread-9.code.77.partial']);
  assert.deepEqual(await names(dir), ['notes.txt', current, 'service-thread-11.3.244.8-node.29.code.4242.partial', 'service-thread-main.js'].sort());
});

test("the data directory's cache/ of s26-s27: its caches go, then the folder, unless something else is in it", async (t) => {
  const { dir, cleanup } = await tempDir('ra-stale-caches-');
  t.after(cleanup);
  const only = join(dir, 'only', 'cache');
  await mkdir(only, { recursive: true });
  await writeFile(join(only, 'service-thread-11.3.244.8-node.29.code'), 'x');
  await removeStaleCaches(only, undefined, true);
  assert.deepEqual(await names(join(dir, 'only')), []);

  const shared = join(dir, 'shared', 'cache');
  await mkdir(shared, { recursive: true });
  await writeFile(join(shared, 'service-thread-11.3.244.8-node.29.code'), 'x');
  await writeFile(join(shared, 'mine.bin'), 'y');
  await removeStaleCaches(shared, undefined, true);
  assert.deepEqual(await names(shared), ['mine.bin']);

  // No folder: nothing to do, no error.
  assert.deepEqual(await removeStaleCaches(join(dir, 'missing'), undefined, true), []);
});

test('a cache/ that is a symbolic link to another folder is left alone, and so is what it points to', async (t) => {
  const { dir, cleanup } = await tempDir('ra-stale-caches-');
  t.after(cleanup);
  const elsewhere = join(dir, 'elsewhere');
  await mkdir(elsewhere);
  await writeFile(join(elsewhere, 'service-thread-1.code'), 'someone else');
  await mkdir(join(dir, 'data'));
  await symlink(elsewhere, join(dir, 'data', 'cache'));
  assert.deepEqual(await removeStaleCaches(join(dir, 'data', 'cache'), undefined, true), []);
  assert.deepEqual(await names(elsewhere), ['service-thread-1.code']);
  assert.deepEqual(await names(join(dir, 'data')), ['cache']);
});
