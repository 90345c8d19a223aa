// The service thread's code caches that no start reads any more (thread-loader.ts): those of other V8
// versions beside the bundle (an editor updated in place keeps the extension's folder, and each V8 writes its
// own cache there, 1-2 MB each), a writer's partial file left by a crash, and the data directory's `cache/`
// of s26-s27, where the cache lived before it moved beside the bundle. Removed after the warm-up, off the
// start's path; a file that cannot be removed is left (tried again at the next start). Another version's
// cache goes only once it is OTHER_VERSION_AGE_MS old: two editors of different V8s sharing one extensions
// folder would otherwise remove each other's at every start, and each start would compile without one.
import { lstat, readdir, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';

const CACHE_FILE = /^service-thread-[^/\\]+\.code$/;
const PARTIAL_FILE = /^service-thread-[^/\\]+\.code\.\d+\.partial$/;
/** A partial file older than this is a crashed writer's: a live one renames its own within milliseconds. */
export const PARTIAL_AGE_MS = 60 * 60 * 1000;
/** Another V8's cache older than this (written, not read: a cache is never rewritten while it is hit) is removed. */
export const OTHER_VERSION_AGE_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Removes the thread's cache files in `folder` other than `keep` (a name in it), those at least `minAgeMs`
 * old, and partial files older than PARTIAL_AGE_MS. `folder` itself is removed when `dropFolder` and nothing
 * else is left in it. A folder that is a symbolic link (or not a folder) is left alone: only files this code
 * wrote are removed.
 */
export async function removeStaleCaches(folder: string, keep: string | undefined, minAgeMs: number, dropFolder = false, now = Date.now()): Promise<string[]> {
  const removed: string[] = [];
  const info = await lstat(folder).catch(() => undefined);
  if (!info?.isDirectory()) return removed;
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    if (name === keep) continue;
    const file = path.join(folder, name);
    const minAge = PARTIAL_FILE.test(name) ? PARTIAL_AGE_MS : CACHE_FILE.test(name) ? minAgeMs : undefined;
    if (minAge === undefined) continue;
    // A file whose age cannot be read counts as new (left).
    const modified =
      minAge > 0
        ? await stat(file).then(
            (info) => info.mtimeMs,
            () => now,
          )
        : 0;
    if (now - modified < minAge) continue;
    await unlink(file).then(
      () => removed.push(name),
      () => undefined,
    );
  }
  // Fails (and is left) when anything else is in it.
  if (dropFolder) await rmdir(folder).catch(() => undefined);
  return removed;
}
