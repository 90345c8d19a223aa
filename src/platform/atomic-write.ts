import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { directorySyncUnsupported } from './directory-sync';

export interface AtomicWriteOptions {
  /** File mode of the result (default 0o600: the file holds secrets). */
  mode?: number;
}

/** The prefix of our temp files, so a directory watcher can tell them from the real file. */
export function isAtomicTempName(name: string, target: string): boolean {
  return name.startsWith(`.${target}.`) && name.endsWith('.tmp');
}

/**
 * Replaces `file` with `content` (text is written as UTF-8) so that a reader (or a crash) sees either
 * the old or the new content, never a mix: temp file in the same directory, fsync, rename over, fsync
 * the directory.
 */
export async function writeFileAtomic(file: string, content: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const mode = options.mode ?? 0o600;
  const dir = dirname(file);
  const temp = join(dir, `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', mode);
  try {
    try {
      await handle.writeFile(content);
      // The umask may have taken bits off `mode`; chmod sets exactly what was asked.
      if (process.platform !== 'win32') await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await renameWithRetry(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dir);
}

// Windows refuses a rename while another process (an editor, a virus scanner) holds the target open;
// that lasts milliseconds, so a few short retries get through.
async function renameWithRetry(from: string, to: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await rename(from, to);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (attempt >= 5 || !(code === 'EPERM' || code === 'EACCES' || code === 'EBUSY')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** attempt));
    }
  }
}

/** Makes the rename itself durable. Not possible on Windows (directories cannot be opened): skipped. */
async function syncDirectory(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (error) {
    // A directory it may not open (a config file in a folder of another's) leaves the rename as it is.
    if ((error as NodeJS.ErrnoException).code !== 'EACCES' && !directorySyncUnsupported(error)) throw error;
  } finally {
    await handle?.close();
  }
}
