import { chmod, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log/logger';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../platform/file-modes';
import { BLOBS_DIR_NAME } from './blob-store';

/** The service's own files: service.json, .log, .lock, .db and journals, history.db and its journal, the config's temp files. */
function isServiceFile(name: string, fileName: string): boolean {
  return name.startsWith(fileName) || name.startsWith('service.') || name.startsWith('.service.') || name.startsWith('history.');
}

/**
 * Takes group and other permissions off the service's files in the data directory, and off the
 * directory itself when it holds nothing else: data written by an older version (0644), a directory
 * made by a container image (0755). Anything else in the directory (someone pointed --data-dir at a
 * folder of theirs) is left exactly as it is. What cannot be changed (not ours) only gets a warning.
 * No POSIX modes on Windows: skipped.
 */
export async function makePrivate(dir: string, fileName: string, logger: Logger): Promise<void> {
  if (process.platform === 'win32') return;
  const entries = await readdir(dir, { withFileTypes: true });
  // Our folders: the blob store's, history.db.lock (the directory node-sqlite3-wasm holds as history.db's
  // lock), and where a salvage keeps a damaged history.db (history.db.salvaging, history.db.damaged-<time>).
  const isOurFolder = (name: string) => name === BLOBS_DIR_NAME || name === 'history.db.lock' || name === 'history.db.salvaging' || name.startsWith('history.db.damaged-');
  const ours = entries.filter((e) => (e.isFile() && isServiceFile(e.name, fileName)) || (e.isDirectory() && isOurFolder(e.name)));
  const targets = ours.map((e) => ({ file: path.join(dir, e.name), mode: e.isDirectory() ? PRIVATE_DIR_MODE : PRIVATE_FILE_MODE }));
  if (ours.length === entries.length) targets.push({ file: dir, mode: PRIVATE_DIR_MODE });
  const changed: Record<string, string> = {};
  for (const { file, mode } of targets) {
    let was: number;
    try {
      was = (await stat(file)).mode & 0o777;
    } catch {
      continue; // removed meanwhile
    }
    if ((was & 0o077) === 0) continue;
    try {
      await chmod(file, mode);
      changed[file === dir ? '.' : path.basename(file)] = `0${was.toString(8)}`;
    } catch (error) {
      logger.warn('store.not_private', { file, mode: `0${was.toString(8)}`, error: error instanceof Error ? error.message : String(error) });
    }
  }
  if (Object.keys(changed).length > 0) logger.warn('store.made_private', { dir, was: changed });
}
