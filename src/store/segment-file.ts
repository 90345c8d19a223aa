import { writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

/** What the journal does with its segment's file: a file on disk (SegmentHandle), or nothing at all (NOWHERE). */
export interface SegmentFile {
  /** Appends through libuv's pool (the file is opened for appending: `position` is always null). */
  write(data: Buffer, offset: number, length: number, position: null): Promise<{ bytesWritten: number }>;
  /** Appends on the calling thread (`fs.writeSync`): bytes written; throws what the pool's write would reject with. */
  writeSync(data: Buffer, offset: number, length: number): number;
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A segment on disk: its FileHandle (whose methods the tests' fakes replace on FileHandle's prototype, so
 * they are called through it) and a write on the loop through its descriptor (`writeSync`: a ~2 us system
 * call for a record of a few hundred bytes, where a FileHandle.write costs a pool hand-off and a loop
 * turn; the fakes of a full disk replace it on this prototype).
 */
export class SegmentHandle implements SegmentFile {
  private constructor(private readonly fh: FileHandle) {}

  /** Opens `file` for appending (`flags` 'a', or 'ax' for a new segment that must not exist). */
  static async open(file: string, flags: 'a' | 'ax', mode?: number): Promise<SegmentHandle> {
    return new SegmentHandle(await open(file, flags, mode));
  }

  write(data: Buffer, offset: number, length: number, position: null): Promise<{ bytesWritten: number }> {
    return this.fh.write(data, offset, length, position);
  }

  writeSync(data: Buffer, offset: number, length: number): number {
    return writeSync(this.fh.fd, data, offset, length);
  }

  datasync(): Promise<void> {
    return this.fh.datasync();
  }

  truncate(length: number): Promise<void> {
    return this.fh.truncate(length);
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}

/** A segment file that takes every byte and keeps none: the warm-up's practice turn writes nowhere. */
export const NOWHERE: SegmentFile = {
  write: async (_data, _offset, length) => ({ bytesWritten: length }),
  writeSync: (_data, _offset, length) => length,
  datasync: async () => undefined,
  truncate: async () => undefined,
  close: async () => undefined,
};

/** Appends all of `data` through the pool. */
export async function writeAll(fh: SegmentFile, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await fh.write(data, offset, data.length - offset, null);
    offset += bytesWritten;
  }
}

/** Appends all of `data` on the calling thread (a short write goes on with the rest, as writeAll does). */
export function writeAllSync(fh: SegmentFile, data: Buffer): void {
  let offset = 0;
  while (offset < data.length) offset += fh.writeSync(data, offset, data.length - offset);
}
