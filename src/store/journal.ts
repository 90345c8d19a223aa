import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log/logger';
import { encodeRecord } from './record';
import type { Op } from './record';
import type { LiveSegment } from './recovery';
import { fsyncDir, segmentPath } from './replay';

export const DEFAULT_SEGMENT_BYTES = 4 * 1024 * 1024;

interface Batch {
  buffers: Buffer[];
  bytes: number;
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Every append chains on this promise; this only keeps a failed batch from counting as unhandled.
  promise.catch(() => {});
  return { buffers: [], bytes: 0, promise, resolve, reject };
}

async function writeAll(fh: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await fh.write(data, offset, data.length - offset, null);
    offset += bytesWritten;
  }
}

export interface JournalOptions {
  dir: string;
  fileName: string;
  segmentBytes: number;
  logger: Logger;
  /** Called with a segment that will get no more writes (for compaction). */
  onSegmentClosed: (segmentPath: string) => void;
}

/**
 * The append side of the journal. Appends made in the same tick share one write and one fdatasync
 * (group commit); while a flush is in flight, new appends gather for the next one. All file work goes
 * through one promise chain, so flushes, rotations and close never overlap.
 */
export class Journal {
  private seq: number;
  private batch: Batch | null = null;
  private inflight: Batch | null = null;
  private io: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private closed = false;
  private readonly closedSizes = new Map<string, number>();
  /** write + fdatasync rounds done (each may carry many records). */
  flushes = 0;

  private constructor(
    private readonly opts: JournalOptions,
    private fh: FileHandle,
    private activeN: number,
    private activePath: string,
    private activeSize: number,
    lastSeq: number,
  ) {
    this.seq = lastSeq;
  }

  /**
   * Appends to `active` (the last recovered segment) or, without one, to a new segment numbered
   * above `maxN`. `closed` are older live segments, counted in stats until `forget`.
   */
  static async open(
    opts: JournalOptions,
    state: { lastSeq: number; active?: LiveSegment; closed: LiveSegment[]; maxN: number },
  ): Promise<Journal> {
    let n: number;
    let file: string;
    let size: number;
    let fh: FileHandle;
    if (state.active) {
      n = state.active.n;
      file = state.active.path;
      size = state.active.size;
      fh = await open(file, 'a');
    } else {
      n = state.maxN + 1;
      file = segmentPath(opts.dir, opts.fileName, n);
      size = 0;
      fh = await open(file, 'ax');
      await fsyncDir(opts.dir);
    }
    const journal = new Journal(opts, fh, n, file, size, state.lastSeq);
    for (const seg of state.closed) journal.closedSizes.set(seg.path, seg.size);
    return journal;
  }

  /** Seq of the last appended record (durable or not). */
  get lastSeq(): number {
    return this.seq;
  }

  get totalBytes(): number {
    let total = this.activeSize;
    for (const size of this.closedSizes.values()) total += size;
    return total;
  }

  get segmentCount(): number {
    return this.closedSizes.size + 1;
  }

  get failed(): Error | null {
    return this.failure;
  }

  /** Journals one transaction. Resolves once it is on disk (fdatasync done). */
  append(ops: Op[]): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    const buf = encodeRecord({ seq: this.seq + 1, ops });
    this.seq++;
    let batch = this.batch;
    if (!batch) {
      const created = newBatch();
      batch = this.batch = created;
      setImmediate(() => this.enqueueIo(() => this.flush(created)));
    }
    batch.buffers.push(buf);
    batch.bytes += buf.length;
    return batch.promise;
  }

  /** Resolves once everything appended so far is durable. */
  barrier(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return (this.batch ?? this.inflight)?.promise ?? Promise.resolve();
  }

  /** Closes the active segment (if it holds anything) and starts a new one. */
  rotate(): Promise<void> {
    return this.enqueueIo(async () => {
      if (this.activeSize > 0 && !this.failure) await this.rotateNow();
    });
  }

  /** Drops closed segments (deleted by compaction) from the stats. */
  forget(paths: readonly string[]): void {
    for (const p of paths) this.closedSizes.delete(p);
  }

  async close(): Promise<void> {
    if (this.closed) return this.io;
    this.closed = true;
    await this.barrier().catch(() => {});
    await this.enqueueIo(() => this.fh.close());
  }

  private enqueueIo(task: () => Promise<void>): Promise<void> {
    const next = this.io.then(task);
    this.io = next.catch(() => {});
    return next;
  }

  private async flush(batch: Batch): Promise<void> {
    if (this.batch === batch) this.batch = null;
    if (this.failure) {
      batch.reject(this.failure);
      return;
    }
    this.inflight = batch;
    try {
      const data = batch.buffers.length === 1 ? batch.buffers[0] : Buffer.concat(batch.buffers, batch.bytes);
      await writeAll(this.fh, data);
      await this.fh.datasync();
      this.activeSize += data.length;
      this.flushes++;
    } catch (err) {
      // After a failed write or fsync the file's tail is unknown and memory already holds the
      // transactions: refuse every later write rather than acknowledge one that may not survive.
      const cause = err instanceof Error ? err.message : String(err);
      this.failure = new Error(`the store's journal could not be written (${cause}); restart the service`);
      this.opts.logger.error('store.journal_write_failed', { segment: path.basename(this.activePath), error: cause });
      batch.reject(this.failure);
      return;
    } finally {
      this.inflight = null;
    }
    batch.resolve();
    if (this.activeSize >= this.opts.segmentBytes) await this.rotateNow();
  }

  private async rotateNow(): Promise<void> {
    const n = this.activeN + 1;
    const next = segmentPath(this.opts.dir, this.opts.fileName, n);
    let fh: FileHandle | undefined;
    try {
      fh = await open(next, 'ax');
      await fsyncDir(this.opts.dir);
    } catch (err) {
      // Keep appending to the current segment; compaction just waits for the next rotation.
      await fh?.close().catch(() => {});
      this.opts.logger.error('store.journal_rotate_failed', { segment: path.basename(next), error: String(err) });
      return;
    }
    const old = this.fh;
    const oldPath = this.activePath;
    this.closedSizes.set(oldPath, this.activeSize);
    this.fh = fh;
    this.activeN = n;
    this.activePath = next;
    this.activeSize = 0;
    await old.close().catch(() => {});
    this.opts.onSegmentClosed(oldPath);
  }
}
