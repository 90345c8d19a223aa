import type { FileHandle } from 'node:fs/promises';

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

/** The bytes as text: undefined when they look binary or are not UTF-8 (a BOM is kept as a character). */
export function decodeText(raw: Uint8Array): string | undefined {
  if (looksBinary(raw.subarray(0, BINARY_SAMPLE_BYTES))) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(raw);
  } catch {
    return undefined;
  }
}

/** The first `bytes` bytes of an open file. */
export async function readHead(handle: FileHandle, bytes = BINARY_SAMPLE_BYTES): Promise<Buffer> {
  const buffer = Buffer.alloc(bytes);
  const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
  return buffer.subarray(0, bytesRead);
}

/** Human size: `512 B`, `256 KiB`, `1.5 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round((bytes / 1024) * 10) / 10} KiB`;
  return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;
}

/** The longest prefix of `text` whose UTF-8 form fits in `bytes`. */
export function prefixWithin(text: string, bytes: number): string {
  const buffer = Buffer.from(text, 'utf8');
  if (buffer.length <= bytes) return text;
  let end = bytes;
  while (end > 0 && (buffer[end] & 0xc0) === 0x80) end--;
  return buffer.subarray(0, end).toString('utf8');
}
