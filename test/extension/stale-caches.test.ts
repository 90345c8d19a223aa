// The service thread's code caches no start reads any more are removed after its warm-up
// (src/service-thread/stale-caches.ts): other V8 versions' beside the bundle, crashed writers' partial files,
// and the data directory's cache/ of s26-s27. Nothing else in those folders is touched. Real files in a temp
// directory.
import assert from 'node:assert/strict';
import { mkdir, readdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { OTHER_VERSION_AGE_MS, PARTIAL_AGE_MS, removeStaleCaches } from '../../src/service-thread/stale-caches';
import { tempDir } from '../helpers/temp';

const names = async (dir: string) => (await readdir(dir)).sort();

test("beside the bundle: other V8 versions' caches a month old and crashed writers' partial files go; the current cache, a recent one of another V8 and anything else stay", async (t) => {
  const { dir, cleanup } = await tempDir('ra-stale-caches-');
  t.after(cleanup);
  const current = 'service-thread-11.3.244.8-node.29.code';
  const names_ = [
    current,
    'service-thread-10.2.154.26-node.26.code',
    'service-thread-12.4.254.21-electron.0.code',
    'service-thread-11.3.244.8-node.29.code.4242.partial',
    'service-thread-9.code.77.partial',
    'notes.txt',
    'service-thread-main.js',
  ];
  for (const name of names_) await writeFile(join(dir, name), 'x');
  const backdate = (name: string, ms: number) => utimes(join(dir, name), (Date.now() - ms) / 1000, (Date.now() - ms) / 1000);
  // An editor updated in place a month ago left its V8's cache; another editor of another V8 that shares the
  // folder wrote its own a day ago and still reads it (removing it would cost that editor a compile at every start).
  await backdate('service-thread-10.2.154.26-node.26.code', OTHER_VERSION_AGE_MS + 60_000);
  await backdate('service-thread-12.4.254.21-electron.0.code', 24 * 60 * 60 * 1000);
  // A partial file of a writer that may still run (fresh) is left; one an hour old is a crashed writer's.
  await backdate('service-thread-9.code.77.partial', PARTIAL_AGE_MS + 60_000);

  const removed = await removeStaleCaches(dir, current, OTHER_VERSION_AGE_MS);
  assert.deepEqual(removed.sort(), ['service-thread-10.2.154.26-node.26.code', 'service-thread-9.code.77.partial']);
  assert.deepEqual(await names(dir), ['notes.txt', current, 'service-thread-11.3.244.8-node.29.code.4242.partial', 'service-thread-12.4.254.21-electron.0.code', 'service-thread-main.js'].sort());
});

test("the data directory's cache/ of s26-s27: its caches go, then the folder, unless something else is in it", async (t) => {
  const { dir, cleanup } = await tempDir('ra-stale-caches-');
  t.after(cleanup);
  const only = join(dir, 'only', 'cache');
  await mkdir(only, { recursive: true });
  await writeFile(join(only, 'service-thread-11.3.244.8-node.29.code'), 'x');
  await removeStaleCaches(only, undefined, 0, true);
  assert.deepEqual(await names(join(dir, 'only')), []);

  const shared = join(dir, 'shared', 'cache');
  await mkdir(shared, { recursive: true });
  await writeFile(join(shared, 'service-thread-11.3.244.8-node.29.code'), 'x');
  await writeFile(join(shared, 'mine.bin'), 'y');
  await removeStaleCaches(shared, undefined, 0, true);
  assert.deepEqual(await names(shared), ['mine.bin']);

  // No folder: nothing to do, no error.
  assert.deepEqual(await removeStaleCaches(join(dir, 'missing'), undefined, 0, true), []);
});

test('a cache/ that is a symbolic link to another folder is left alone, and so is what it points to', async (t) => {
  const { dir, cleanup } = await tempDir('ra-stale-caches-');
  t.after(cleanup);
  const elsewhere = join(dir, 'elsewhere');
  await mkdir(elsewhere);
  await writeFile(join(elsewhere, 'service-thread-1.code'), 'someone else');
  await mkdir(join(dir, 'data'));
  await symlink(elsewhere, join(dir, 'data', 'cache'));
  assert.deepEqual(await removeStaleCaches(join(dir, 'data', 'cache'), undefined, 0, true), []);
  assert.deepEqual(await names(elsewhere), ['service-thread-1.code']);
  assert.deepEqual(await names(join(dir, 'data')), ['cache']);
});
