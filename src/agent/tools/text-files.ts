import { randomBytes } from 'node:crypto';
import { open, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';

export const BINARY_SAMPLE_BYTES = 8192;

/**
 * Whether a file's first bytes look like binary data: any NUL byte (UTF-16 text counts as binary
 * here), or many control characters besides the usual whitespace and escape.
 */
export function looksBinary(sample: Uint8Array): boolean {
  if (sample.length === 0) return false;
  let control = 0;
  for (const byte of sample) {
    if (byte === 0) return true;
    if (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c && byte !== 0x08 && byte !== 0x1b) control++;
  }
  return control / sample.length > 0.1;
}

/** The first `bytes` bytes of a file. */
export async function readHead(file: string, bytes = BINARY_SAMPLE_BYTES): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** Human size: `512 B`, `256 KiB`, `1.5 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round((bytes / 1024) * 10) / 10} KiB`;
  return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;
}

/**
 * Replaces (or creates) `file` so that a reader, or a crash, sees the old content or the new, never a
 * half-written file: temp file beside it, fsync, rename over. An existing file keeps its mode; a new
 * one gets the process's default (umask applies).
 */
export async function writeTextAtomic(file: string, text: string): Promise<void> {
  let mode: number | undefined;
  try {
    mode = (await stat(file)).mode & 0o7777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', mode ?? 0o666);
  try {
    try {
      await handle.writeFile(text, 'utf8');
      if (mode !== undefined && process.platform !== 'win32') await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}
