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

interface Settled {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
}

interface Batch extends Settled {
  buffers: Buffer[];
  bytes: number;
  /** The batch's write() done, before its fdatasync: in the file, which a killed process cannot take back. */
  written: Settled;
  /**
   * Whether its flush ends with an fdatasync. False while every record in it was appended with
   * `deferSync` and nobody asked for a barrier: it is then only written, and made durable (its promise
   * resolved) by the next fdatasync of the file, whoever's.
   */
  sync: boolean;
  /** Holds a void record (Journal.voidRecord): the segment is not closed before it is written. */
  voids: boolean;
  /**
   * Its write was started at once (Journal.append's `now`), alone: records appended meanwhile gather in
   * the next batch, whose fdatasync then covers this one too (commit), so a tick's records still share one.
   */
  alone: boolean;
}

function settled(): Settled {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Every append chains on this promise; this only keeps a failed batch from counting as unhandled.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

function newBatch(): Batch {
  return { buffers: [], bytes: 0, ...settled(), written: settled(), sync: false, voids: false, alone: false };
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
  /** Batches written without an fdatasync (`deferSync`), oldest first: durable with the next one. */
  private unsynced: Batch[] = [];
  private io: Promise<void> = Promise.resolve();
  /** Tasks queued on `io` and not yet settled: 0 when a write asked `now` may start at once. */
  private ioPending = 0;
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
  /** fdatasync rounds done (each may carry many records, and the deferred ones written before it). */
  flushes = 0;
  /**
   * Called as each fdatasync is asked, before it is awaited (the main thread is idle until it is done),
   * and as a rotation is asked: the store applies the statements waiting behind their records then
   * (Database.writePlanned). A segment is closed only after a sync covered its records (flush) or once a
   * rotation was asked, so one of the two came before: a void record appended then (a statement that
   * failed) goes in its record's segment (`voids`). Never throws.
   */
  syncAsked: () => void = () => undefined;

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

  /** The segment's directory fsync failed: the next commit runs one afresh. */
  private entryAgain = false;

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
      // Its entry may never have been made durable (the run that made it was killed before): made so
      // beside this run's first commit, as a new segment's is.
      entryDurable = fsyncDir(opts.dir);
      entryDurable.catch(() => {});
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

  /** Records a full disk refused, or a sync it refused (a segment's directory entry): retried. */
  get owesWrites(): boolean {
    return this.owed.length > 0 || (this.entryAgain && this.degradedReason !== null);
  }

  /** Writes the records a full disk refused; rejects (with the disk-full error) while it still does. */
  retry(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return this.enqueueIo(async () => {
      if (this.failure) throw this.failure;
      // After close the file handle is gone: what is still owed stays unwritten (logged by close).
      if (this.owesWrites && !this.fhClosed) await this.commit([], 0);
    });
  }

  /**
   * Journals one transaction (with the history.db bodies it refers to). Resolves once it is on disk
   * (fdatasync done). With `deferSync` its record is written at the loop's next turn like any other but
   * not fdatasynced for its own sake: it waits for the next fdatasync of the file (another append's, or
   * a `barrier()`, which its writer asks for before anything reveals it). In the file, a killed process
   * cannot lose it (`written()`); only a power loss before that fdatasync can.
   */
  append(ops: Op[], bodies?: KeyedBody[], deferSync = false, now = false): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    const buf = encodeRecord({ seq: this.seq + 1, ops, bodies });
    this.seq++;
    return this.push(buf, !deferSync, now);
  }

  /**
   * The record of `seq`, appended by the caller in this same synchronous block (Database.writePlanned),
   * was not applied: a void record naming it is appended, so replay skips both. Asked at once, in the
   * same segment: its flush is queued right behind the record's (or it joins the record's batch), and a
   * flush does not close the segment while a void record waits (`voids`). Resolves once it is durable.
   */
  voidRecord(seq: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const buf = encodeRecord({ seq: this.seq + 1, ops: [], voids: seq });
    this.seq++;
    const durable = this.push(buf, true, false, true);
    if (this.batch) this.batch.voids = true;
    return durable;
  }

  /**
   * Adds a record's bytes to the gathering batch, or to a new one whose flush is asked at the loop's next
   * check phase (appends of this tick share it). `now`: with no write in flight or queued, the new batch's
   * write is handed to the pool at once, in this synchronous block. `queued`: its flush goes on the io
   * chain at once (behind what is there), not at the check phase.
   */
  private push(buf: Buffer, sync: boolean, now: boolean, queued = false): Promise<void> {
    let batch = this.batch;
    const created = batch === null;
    if (!batch) batch = this.batch = newBatch();
    batch.buffers.push(buf);
    batch.bytes += buf.length;
    if (sync) batch.sync = true;
    if (created) {
      const flushed = batch;
      if (now && this.ioPending === 0) {
        flushed.alone = true;
        void this.enqueueIo(() => this.flush(flushed), true);
      } else if (queued) void this.enqueueIo(() => this.flush(flushed));
      else setImmediate(() => this.enqueueIo(() => this.flush(flushed)));
    }
    return batch.promise;
  }

  /**
   * Resolves once everything appended so far is written to the file (its write() done, its fdatasync
   * maybe not yet): a process killed from then on loses none of it, a power loss still may (barrier()
   * tells when it cannot). Undefined while a full disk leaves records owed: then only barrier() tells.
   */
  written(): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure);
    if (this.owed.length > 0) return undefined;
    return (this.batch ?? this.inflight)?.written.promise ?? Promise.resolve();
  }

  /**
   * Resolves once everything appended so far is durable: asks for the fdatasync deferred records wait for.
   * Owed records (a full disk refused them) are retried now, unless `retryOwed` is false (a reader that
   * waits only for what it could read: owed records are applied once written, and their writers retry).
   */
  barrier(retryOwed = true): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const pending = this.batch ?? this.inflight;
    if (pending) {
      // Its flush syncs once written (or, past that point, syncs after: flush looks again).
      pending.sync = true;
      return pending.promise;
    }
    if (this.owesWrites && retryOwed) return this.retry();
    if (this.unsynced.length === 0) return Promise.resolve();
    // Only written records wait: an empty batch that syncs (appends of this tick join it).
    const batch = newBatch();
    batch.sync = true;
    this.batch = batch;
    void this.enqueueIo(() => this.flush(batch));
    return batch.promise;
  }

  /** Closes the active segment (if it holds anything) and starts a new one. */
  rotate(): Promise<void> {
    this.syncAsked();
    return this.enqueueIo(async () => {
      if (this.activeSize === 0 || this.failure || this.fhClosed) return;
      // A closed segment is never synced again: what waits for a sync in it gets one first. What a full
      // disk left owed is written first too (a void record must stay in its record's segment: replay
      // looks for it there); while the disk still refuses it, the segment is not closed (this rejects).
      if (this.unsynced.length > 0 || this.owed.length > 0) await this.commit([], 0);
      await this.rotateNow();
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

  /** Queues `task` on the io chain; `now`: started in this synchronous block when the chain is idle. */
  private enqueueIo(task: () => Promise<void>, now = false): Promise<void> {
    const next = now && this.ioPending === 0 ? task() : this.io.then(task);
    this.ioPending++;
    const done = () => {
      this.ioPending--;
    };
    next.then(done, done);
    this.io = next.catch(() => {});
    return next;
  }

  private async flush(batch: Batch): Promise<void> {
    if (this.batch === batch) this.batch = null;
    if (this.failure) {
      batch.written.reject(this.failure);
      batch.reject(this.failure);
      return;
    }
    this.inflight = batch;
    try {
      await this.commit(batch.buffers, batch.bytes, batch);
      // A barrier asked while the write was finishing (after commit chose not to sync) is answered now.
      if (batch.sync && this.unsynced.includes(batch)) await this.commit([], 0);
    } catch (err) {
      this.unsynced = this.unsynced.filter((b) => b !== batch);
      batch.written.reject(err as Error);
      batch.reject(err as Error);
      return;
    } finally {
      this.inflight = null;
    }
    // Written only, it stays in the segment until a sync covers it: the segment is closed after one. A
    // void record waiting in the next batch goes in this segment, beside the record it names.
    if (this.unsynced.length === 0 && !this.batch?.voids && this.activeSize >= this.opts.segmentBytes) await this.rotateNow();
  }

  /**
   * Writes the owed records, then `batch`'s, and fdatasyncs (which makes every record written before
   * durable too), unless the batch defers its sync: then it joins `unsynced`. On a full disk all of
   * them become owed. Without a batch: what a full disk left owed (retry).
   */
  private async commit(buffers: Buffer[], bytes: number, batch?: Batch): Promise<void> {
    const parts = this.owed.length > 0 ? [...this.owed, ...buffers] : buffers;
    const total = this.owedBytes + bytes;
    // Records a full disk refused were refused to their writers: they are only ever written with a sync
    // (and so is anything while a sync a full disk refused is owed).
    let sync = batch === undefined || batch.sync || this.owesWrites;
    try {
      if (total > 0) await writeAll(this.fh, parts.length === 1 ? parts[0] : Buffer.concat(parts, total));
    } catch (err) {
      throw await this.writeFailed(err, parts, total);
    }
    // In the file whole: never cut back again (the model may be asked about these records from now on).
    this.activeSize += total;
    this.owed = [];
    this.owedBytes = 0;
    batch?.written.resolve();
    // Written alone, with records gathered behind it meanwhile: their batch's fdatasync (next, at its
    // check phase) makes this one durable too. It syncs itself (it is not started at once), so one hop.
    if (sync && batch?.alone && this.batch !== null && !this.owesWrites) {
      this.batch.sync = true;
      batch.sync = false;
      sync = false;
    }
    if (sync) {
      await this.syncWritten();
      this.synced(batch);
    } else if (batch) this.unsynced.push(batch);
    if (this.degradedReason !== null) {
      this.opts.logger.info('store.disk_writable_again', { segment: path.basename(this.activePath) });
      this.degradedReason = null;
    }
  }

  /** An fdatasync done: `batch` and every record written before it are durable, oldest first. */
  private synced(batch: Batch | undefined): void {
    this.flushes++;
    const written = this.unsynced;
    this.unsynced = [];
    for (const earlier of written) earlier.resolve();
    batch?.resolve();
  }

  /**
   * An fdatasync of what is in the file. Its failure, whatever the error (a full disk's too), is fatal:
   * the records it was to make durable stay in the file, but whether they reach the disk is unknown (the
   * kernel may have dropped the pages it could not write back, and a later fdatasync succeed without
   * them), so nothing more is acknowledged; cutting them off is no answer either, as the model may
   * already have been asked about a written record (a resend after a restart would run its turn again).
   */
  private async datasync(): Promise<void> {
    try {
      const synced = this.fh.datasync();
      this.syncAsked();
      await synced;
    } catch (err) {
      throw this.fail(err instanceof Error ? err.message : String(err));
    }
  }

  /**
   * Makes what is in the file durable: its fdatasync, then its segment's directory entry (a record is
   * durable only once the entry is too). The entry's fsync refused for a full disk: what it was to make
   * durable stays in the file but is not acknowledged (its writers, and the records waiting for a
   * deferred sync, get the disk-full error, as owed records do), and the sync is owed: the next commit
   * or retry runs it afresh (not at once: on a full disk a fsync begun then fails too, and the first retry
   * once there is space would be answered by it).
   */
  private async syncWritten(): Promise<void> {
    await this.datasync();
    const entry = this.entryDurable ?? (this.entryAgain ? fsyncDir(this.opts.dir) : null);
    if (!entry) return;
    this.entryDurable = null;
    this.entryAgain = true;
    try {
      await entry;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === undefined || !DISK_FULL_CODES.has(code)) throw this.fail(err instanceof Error ? err.message : String(err));
      const refused = this.diskFull(code, 0);
      for (const earlier of this.unsynced) earlier.reject(refused);
      this.unsynced = [];
      throw refused;
    }
    this.entryAgain = false;
  }

  /** Writes fail for a full disk (`records`: how many it refused): degraded, and logged once. */
  private diskFull(code: string, records: number): Error {
    const reason = `disk full: could not write the journal (${code})`;
    if (this.degradedReason === null) this.opts.logger.error('store.disk_full', { segment: path.basename(this.activePath), error: code, records });
    this.degradedReason = reason;
    return new ServiceError('server_error', reason);
  }

  /**
   * A write the full disk refused: the segment is cut back to its last byte written whole and reopened,
   * and the records become owed (retried by the next write). Records waiting for a deferred sync are
   * before that byte: a sync needs no new space, so they get it now rather than wait for a write that
   * cannot happen (their turn would wait with them). Anything else: the file's tail is unknown and
   * memory already holds the transactions, so every later write is refused rather than acknowledged unsafely.
   */
  private async writeFailed(err: unknown, parts: Buffer[], bytes: number): Promise<Error> {
    const code = (err as NodeJS.ErrnoException).code;
    const cause = err instanceof Error ? err.message : String(err);
    if (code !== undefined && DISK_FULL_CODES.has(code)) {
      try {
        await this.fh.truncate(this.activeSize);
        const reopened = await open(this.activePath, 'a');
        await this.fh.close().catch(() => {});
        this.fh = reopened;
      } catch (cutErr) {
        return this.fail(`${cause}; then ${cutErr instanceof Error ? cutErr.message : String(cutErr)}`);
      }
      this.owed = parts;
      this.owedBytes = bytes;
      const refused = this.diskFull(code, parts.length);
      if (this.unsynced.length === 0) return refused;
      try {
        await this.syncWritten();
      } catch (syncErr) {
        return syncErr as Error;
      }
      this.synced(undefined);
      return refused;
    }
    return this.fail(cause);
  }

  /** The journal can no longer be written: every later write is refused, and nothing written but unsynced is acknowledged. */
  private fail(cause: string): Error {
    const segment = path.basename(this.activePath);
    this.failure = new ServiceError('server_error', `the store's journal could not be written (${cause}); restart the service`);
    // Written but never synced: whether they are on disk is unknown, so they are not acknowledged.
    for (const earlier of this.unsynced) earlier.reject(this.failure);
    this.unsynced = [];
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
      this.entryAgain = false;
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
