import { closeSync, fsyncSync, openSync } from 'node:fs';

/**
 * Whether a directory's fsync failed because the platform cannot make one, not because the disk failed:
 * Windows (a directory cannot be opened), file systems that refuse it (EINVAL, EISDIR, EPERM). The
 * rename or creation it was for is then as durable as that platform makes it. One rule for every
 * directory sync (this file's, store/replay.ts fsyncDir, platform/atomic-write.ts).
 */
export function directorySyncUnsupported(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return process.platform === 'win32' || code === 'EISDIR' || code === 'EPERM' || code === 'EINVAL';
}

/** Makes the entries of `dir` durable (a rename into or out of it, a file made or removed there): fsync of the directory. */
export function syncDirectorySync(dir: string): void {
  if (process.platform === 'win32') return;
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch (error) {
    if (!directorySyncUnsupported(error)) throw error;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
