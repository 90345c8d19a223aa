import { chmod, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log/logger';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './replay';

/**
 * Takes group and other permissions off the data directory and the files in it: data written by an
 * older version (0644), a directory made by a container image (0755). What cannot be changed (not
 * ours) only gets a warning. No POSIX modes on Windows: skipped.
 */
export async function makePrivate(dir: string, logger: Logger): Promise<void> {
  if (process.platform === 'win32') return;
  const targets = [{ file: dir, mode: PRIVATE_DIR_MODE }];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isFile()) targets.push({ file: path.join(dir, entry.name), mode: PRIVATE_FILE_MODE });
  }
  const changed: Record<string, string> = {};
  for (const { file, mode } of targets) {
    let was: number;
    try {
      was = (await stat(file)).mode & 0o777;
    } catch {
      continue; // removed meanwhile
    }
    if ((was & 0o077) === 0) continue;
    const name = file === dir ? '.' : path.basename(file);
    try {
      await chmod(file, mode);
      changed[name] = `0${was.toString(8)}`;
    } catch (error) {
      logger.warn('store.not_private', { file, mode: `0${was.toString(8)}`, error: error instanceof Error ? error.message : String(error) });
    }
  }
  if (Object.keys(changed).length > 0) logger.warn('store.made_private', { dir, was: changed });
}
