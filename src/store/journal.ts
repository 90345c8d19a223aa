import { open, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log/logger';
import { ServiceError } from '../protocol/errors';
import { encodeRecord } from './record';
import type { Op } from './record';
import type { KeyedBody } from './history/protocol';
import type { LiveSegment } from './recovery';
import { fsyncDir, segmentPath } from './replay';
import { PRIVATE_FILE_MODE } from '../platform/file-modes';

export const DEFAULT_SEGMENT_BYTES = 4 * 1024 * 1024;
/** Errors after which the disk may take writes again once space is freed. */
const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);

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

/** What the journal does with its segment's file: a FileHandle, or nothing at all (Journal.scratch). */
interface SegmentFile {
  write(data: Buffer, offset: number, length: number, position: null): Promise<{ bytesWritten: number }>;
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/** A segment file that takes every byte and keeps none: the warm-up's practice turn writes nowhere. */
const NOWHERE: SegmentFile = {
  write: async (_data, _offset, length) => ({ bytesWritten: length }),
  datasync: async () => undefined,
  truncate: async () => undefined,
  close: async () => undefined,
};

async function writeAll(fh: SegmentFile, data: Buffer): Promise<void> {
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
  /**
   * Records of flushes the full disk refused, in order. They already changed the database in memory,
   * so they are written first, before anything newer, once the disk takes writes again.
   */
  private owed: Buffer[] = [];
  private owedBytes = 0;
  /** Why writes fail for now (a full disk), null when they work. */
  private degradedReason: string | null = null;
  private closed = false;
  private fhClosed = false;
  private readonly closedSizes = new Map<string, number>();
  /** write + fdatasync rounds done (each may carry many records). */
  flushes = 0;

  private constructor(
    private readonly opts: JournalOptions,
    private fh: SegmentFile,
    private activeN: number,
    private activePath: string,
    private activeSize: number,
    lastSeq: number,
    /** A new segment's directory fsync, until a commit has waited for it (Journal.open). */
    private entryDurable: Promise<void> | null = null,
  ) {
    this.seq = lastSeq;
  }

  /**
   * Appends to `active` (the last recovered segment) or, without one, to a new segment numbered
   * above `maxN`. `closed` are older live segments, counted in stats until `forget`.
   */
  static async open(opts: JournalOptions, state: { lastSeq: number; active?: LiveSegment; closed: LiveSegment[]; maxN: number }): Promise<Journal> {
    let n: number;
    let file: string;
    let size: number;
    let fh: FileHandle;
    let entryDurable: Promise<void> | null = null;
    if (state.active) {
      n = state.active.n;
      file = state.active.path;
      size = state.active.size;
      fh = await open(file, 'a');
    } else {
      n = state.maxN + 1;
      file = segmentPath(opts.dir, opts.fileName, n);
      size = 0;
      fh = await open(file, 'ax', PRIVATE_FILE_MODE);
      // The new segment's directory entry is made durable beside its first records' write and fdatasync
      // (commit waits for both), not before them: a new data directory's first commit (its schema) took
      // two fsyncs one after the other on the start's longest path (docs/design.md, "What a start makes durable").
      entryDurable = fsyncDir(opts.dir);
      entryDurable.catch(() => {});
    }
    const journal = new Journal(opts, fh, n, file, size, state.lastSeq, entryDurable);
    for (const seg of state.closed) journal.closedSizes.set(seg.path, seg.size);
    return journal;
  }

  /**
   * A journal that encodes, batches and "flushes" its records as the real one does, into no file: what
   * the service's warm-up practises a turn on (Database.scratch), so that this code's first run is not
   * the first chat's. Its segment never fills (nothing is closed or compacted).
   */
  static scratch(logger: Logger): Journal {
    return new Journal({ dir: '', fileName: '', segmentBytes: Number.POSITIVE_INFINITY, logger, onSegmentClosed: () => undefined }, NOWHERE, 0, '', 0, 0);
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

  /** Set when the journal can no longer be written at all (restart needed). */
  get failed(): Error | null {
    return this.failure;
  }

  /** Why writes fail for now (a full disk); they are retried, so this clears by itself. */
  get degraded(): string | null {
    return this.degradedReason;
  }

  get owesWrites(): boolean {
    return this.owed.length > 0;
  }

  /** Writes the records a full disk refused; rejects (with the disk-full error) while it still does. */
  retry(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return this.enqueueIo(async () => {
      if (this.failure) throw this.failure;
      // After close the file handle is gone: what is still owed stays unwritten (logged by close).
      if (this.owed.length > 0 && !this.fhClosed) await this.commit([], 0);
    });
  }

  /** Journals one transaction (with the history.db bodies it refers to). Resolves once it is on disk (fdatasync done). */
  append(ops: Op[], bodies?: KeyedBody[]): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    const buf = encodeRecord({ seq: this.seq + 1, ops, bodies });
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
    const pending = (this.batch ?? this.inflight)?.promise;
    if (pending) return pending;
    return this.owed.length > 0 ? this.retry() : Promise.resolve();
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
    if (this.owed.length > 0) {
      // Never acknowledged (each got the disk-full error), so no promise is broken; but say so.
      this.opts.logger.error('store.unwritten_on_close', { records: this.owed.length, reason: this.degradedReason });
    }
    await this.enqueueIo(async () => {
      this.fhClosed = true;
      await this.fh.close();
    });
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
      await this.commit(batch.buffers, batch.bytes);
    } catch (err) {
      batch.reject(err as Error);
      return;
    } finally {
      this.inflight = null;
    }
    batch.resolve();
    if (this.activeSize >= this.opts.segmentBytes) await this.rotateNow();
  }

  /** Writes the owed records, then `buffers`, and fdatasyncs. On a full disk all of them become owed. */
  private async commit(buffers: Buffer[], bytes: number): Promise<void> {
    const parts = this.owed.length > 0 ? [...this.owed, ...buffers] : buffers;
    const total = this.owedBytes + bytes;
    try {
      await writeAll(this.fh, parts.length === 1 ? parts[0] : Buffer.concat(parts, total));
      await this.fh.datasync();
      // A record is durable only once its segment's entry is too (a failed fsync is tried again by the next commit).
      const entry = this.entryDurable;
      if (entry) {
        this.entryDurable = entry.catch(() => fsyncDir(this.opts.dir));
        this.entryDurable.catch(() => {});
        await entry;
        this.entryDurable = null;
      }
    } catch (err) {
      throw await this.writeFailed(err, parts, total);
    }
    this.activeSize += total;
    this.flushes++;
    this.owed = [];
    this.owedBytes = 0;
    if (this.degradedReason !== null) {
      this.opts.logger.info('store.disk_writable_again', { segment: path.basename(this.activePath) });
      this.degradedReason = null;
    }
  }

  /**
   * A full disk: the segment is cut back to its last durable byte and reopened, and the records become
   * owed (retried by the next write). Anything else: the file's tail is unknown and memory already
   * holds the transactions, so every later write is refused rather than acknowledged unsafely.
   */
  private async writeFailed(err: unknown, parts: Buffer[], bytes: number): Promise<Error> {
    const code = (err as NodeJS.ErrnoException).code;
    const segment = path.basename(this.activePath);
    let cause = err instanceof Error ? err.message : String(err);
    if (code !== undefined && DISK_FULL_CODES.has(code)) {
      try {
        await this.fh.truncate(this.activeSize);
        const reopened = await open(this.activePath, 'a');
        await this.fh.close().catch(() => {});
        this.fh = reopened;
        this.owed = parts;
        this.owedBytes = bytes;
        const reason = `disk full: could not write the journal (${code})`;
        if (this.degradedReason === null) this.opts.logger.error('store.disk_full', { segment, error: code, records: parts.length });
        this.degradedReason = reason;
        return new ServiceError('server_error', reason);
      } catch (cutErr) {
        cause = `${cause}; then ${cutErr instanceof Error ? cutErr.message : String(cutErr)}`;
      }
    }
    this.failure = new ServiceError('server_error', `the store's journal could not be written (${cause}); restart the service`);
    this.opts.logger.error('store.journal_write_failed', { segment, error: cause });
    return this.failure;
  }

  private async rotateNow(): Promise<void> {
    const n = this.activeN + 1;
    const next = segmentPath(this.opts.dir, this.opts.fileName, n);
    let fh: FileHandle | undefined;
    try {
      fh = await open(next, 'ax', PRIVATE_FILE_MODE);
      await fsyncDir(this.opts.dir);
    } catch (err) {
      // Keep appending to the current segment; compaction just waits for the next rotation. A segment
      // created here is removed, or the next rotation would find its number taken.
      if (fh) {
        await fh.close().catch(() => {});
        await unlink(next).catch(() => {});
      }
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
