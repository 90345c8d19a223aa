import { mkdir, open, readFile, realpath, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Database as SqlJsDatabase } from 'sql.js';
import { DATABASE_FILE_NAME } from '../platform/paths';
import { packedMap } from '../platform/packed-map';
import { isThenable } from '../platform/thenable';
import { nullLogger } from '../log/logger';
import type { Logger } from '../log/logger';
import { copyFromHandle } from './backup-files';
import { Compactor } from './compaction';
import { DEFAULT_SEGMENT_BYTES, Journal } from './journal';
import { acquireLock } from '../platform/lock-file';
import { makePrivate } from './private-files';
import type { DirLock } from '../platform/lock-file';
import { normalizeParams } from './record';
import { recoverJournal } from './recovery';
import type { Op, SqlParamInput } from './record';
import { fsyncDir, hasMetaTable, META_TABLE_SQL, readSnapshotSeq } from './replay';
import { PRIVATE_DIR_MODE } from '../platform/file-modes';
import { keepLock, loadSqlJs, skipSyncs } from './sqljs';
import type { KeyedBody } from './history/protocol';
import { queryAll, queryOne, runControl, runOp, StatementCache } from './statements';
import { WriteWatches } from './read-memo';
import type { WriteWatch } from './read-memo';

export type { SqlParam, SqlParamInput } from './record';

export interface DatabaseOptions {
  logger?: Logger;
  /** A journal segment is closed (and compacted) once it holds this many bytes. Default 4 MiB. */
  segmentBytes?: number;
  /** Snapshot file name in the directory; journal segments are `<fileName>.journal.<n>`. */
  fileName?: string;
  /**
   * Open a journal with damaged segments anyway: each is kept aside (`.damaged-<time>`) and replaced by
   * its readable records. Without it such a journal refuses the open (JournalDamagedError).
   */
  recover?: boolean;
  /** Take over a `service.lock` written by another host (`serve --break-lock`; see acquireLock). */
  breakLock?: boolean;
  /**
   * Called once `service.lock` is taken, before anything of the directory is read: the service listens
   * from then on while the rest of the open goes on (service.ts, `Service.begin`).
   */
  onLocked?: () => void;
  /**
   * Called with the directory's real path as soon as service.lock is held, before the snapshot is read:
   * starts work that needs the lock (history.db's open, in its worker) beside this open. What it returns
   * is awaited when this open then fails, before the lock is released.
   */
  withLock?: (dir: string) => () => Promise<void>;
  /**
   * Journal segments wait for `releaseCompaction` before they are compacted (and then deleted): records
   * may hold bodies whose only durable copy they are (WriteTx.keepBodies) until history.db is synced.
   */
  holdCompaction?: boolean;
}

/** How a write is made durable: by its own fdatasync (default), or `deferSync` (Database.write). */
export interface WriteOptions {
  deferSync?: boolean;
}

/**
 * One statement of a write known before it runs (Database.writePlanned): its text and parameters, and
 * `check`, which sees the rows it changed and throws to fail the whole write (a conversation not found).
 */
export interface PlannedOp {
  sql: string;
  params: readonly SqlParamInput[];
  check?: (changes: number) => void;
}

/**
 * A planned write whose record is handed to the journal and whose statements wait to be applied
 * (Database.writePlanned): `failed` is set once they failed when applied (rejects once the void record is durable).
 */
interface Pending {
  ops: readonly PlannedOp[];
  planned: readonly Op[];
  /** The prelude and riders its record journals (given back when its statements fail). */
  prelude: readonly Op[];
  riders: readonly Op[];
  seq: number;
  failed?: Promise<never>;
}

/** Runs planned statements inside a caller's transaction, each then its check. */
export function runPlanned(tx: WriteTx, ops: readonly PlannedOp[]): void {
  checkEach(ops, (op) => tx.run(op.sql, op.params).changes);
}

/** Each of `ops` run (`run` answers the rows it changed), then its check. */
function checkEach(ops: readonly PlannedOp[], run: (op: PlannedOp, i: number) => number): void {
  ops.forEach((op, i) => {
    // Run first: `op.check?.(...)` would not evaluate its argument without a check.
    const changes = run(op, i);
    op.check?.(changes);
  });
}

export interface RunResult {
  /** Rows inserted, updated or deleted by the statement. */
  changes: number;
}

/**
 * The statements of one write transaction. Statements run at once (later reads in the same
 * transaction see them) and are journaled together. SQL must be deterministic: the journal replays
 * the text, so ids, timestamps and random values come from JS as parameters.
 */
export interface WriteTx {
  run(sql: string, params?: readonly SqlParamInput[]): RunResult;
  get<T = Record<string, unknown>>(sql: string, params?: readonly SqlParamInput[]): T | undefined;
  all<T = Record<string, unknown>>(sql: string, params?: readonly SqlParamInput[]): T[];
  /**
   * Journals history.db bodies with this transaction: bodies written there but not yet synced, which
   * its rows refer to. The record is then their durable copy until history.db is synced (see
   * `releaseCompaction`), so one fsync makes the rows and their bodies durable together.
   */
  keepBodies(bodies: readonly KeyedBody[]): void;
}

export interface DatabaseStats {
  /** Bytes in live journal segments (not yet folded into the snapshot). */
  journalBytes: number;
  /** Live journal segments, the active one included. */
  segments: number;
  /** Compactions completed since open. */
  compactions: number;
  /** Seq of the last journaled transaction. */
  lastSeq: number;
  /** Journal fdatasync rounds since open (group commit puts many transactions in one; a deferred write waits for the next). */
  flushes: number;
}

/** The file name a scratch database (Database.scratch) goes by: it has none. */
const SCRATCH_NAME = ':scratch:';

/**
 * sql.js in memory, made durable by an append-only journal of write transactions and compacted into
 * the `service.db` snapshot by a worker thread. One process owns a directory (service.lock).
 */
export class Database {
  private readonly cache: StatementCache;
  private inWrite = false;
  private closing: Promise<void> | null = null;
  /** Bodies journaled by the records replayed at open, until taken (takeReplayedBodies). */
  private replayedBodies: KeyedBody[] = [];
  /** Closed segments waiting to be handed to the compactor (holdCompaction), oldest first. */
  private held: string[] = [];
  /** Makes history.db's bodies durable before segments go to the compactor; null until released. */
  private beforeCompaction: (() => Promise<void>) | null;
  /** The running hand-over of held segments (compact() waits for it). */
  private handoff: Promise<void> = Promise.resolve();
  /** Statements that ride along with the next write that has its own (`withNextWrite`). */
  private riders: Op[] = [];
  /**
   * Statements already applied in memory at open (the `meta` table of a new database), journaled first
   * in the next record, so that a new directory's open costs no fsync of its own: until then a restart
   * simply applies them again.
   */
  private prelude: Op[] = [];
  /** Shown every statement of a write before it runs: the readers that keep what they read (ReadMemo). */
  private readonly watches = new WriteWatches();
  /**
   * Planned writes journaled whose statements are not applied yet, in record order: applied once the
   * fdatasync that covers their records is asked (Journal's `syncAsked`), or before anything else uses
   * sql.js (`settle`, the barrier), whichever comes first.
   */
  private pending: Pending[] = [];

  private constructor(
    readonly dir: string,
    /** The snapshot's name in `dir` (service.db); journal segments are `<fileName>.journal.<n>`. */
    readonly fileName: string,
    private readonly sql: SqlJsDatabase,
    private readonly journal: Journal,
    private readonly compactor: Compactor,
    private readonly lock: DirLock,
    private readonly logger: Logger,
    cache: StatementCache,
    hold: boolean,
  ) {
    this.cache = cache;
    this.beforeCompaction = hold ? null : () => Promise.resolve();
    // The main thread waits for the fdatasync then: the statements behind its records are applied meanwhile.
    journal.syncAsked = () => this.settle();
  }

  static async open(dir: string, options: DatabaseOptions = {}): Promise<Database> {
    const logger = (options.logger ?? nullLogger).child({ component: 'store' });
    const fileName = options.fileName ?? DATABASE_FILE_NAME;
    const segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    if (!(segmentBytes > 0)) throw new RangeError('segmentBytes must be positive');
    // Private: the database holds conversations, memory and webhook payloads.
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    const realDir = await realpath(dir);
    const lock = await acquireLock(realDir, logger, dir, { breakLock: options.breakLock });
    options.onLocked?.();
    await makePrivate(realDir, fileName, logger).catch((err: unknown) => logger.warn('store.not_private', { dir: realDir, error: String(err) }));
    let sql: SqlJsDatabase | undefined;
    let cache: StatementCache | undefined;
    let undoLocked: (() => Promise<void>) | undefined;
    try {
      undoLocked = options.withLock?.(realDir);
      const snapshotPath = path.join(realDir, fileName);
      // A snapshot that was being written when the last process stopped; the real one is intact.
      await rm(`${snapshotPath}.tmp`, { force: true });

      const SQL = await loadSqlJs();
      let snapshot: Buffer | undefined;
      try {
        snapshot = await readFile(snapshotPath);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      sql = new SQL.Database(snapshot);
      cache = new StatementCache(sql);
      let snapshotSeq: number;
      try {
        snapshotSeq = readSnapshotSeq(cache);
      } catch (err) {
        throw new Error(`${snapshotPath} is not a readable database: ${err instanceof Error ? err.message : String(err)}`);
      }
      // Not persisted, and the journal is what makes commits durable: SQLite's own rollback journal
      // only needs to live in memory.
      sql.run('PRAGMA journal_mode = MEMORY');
      keepLock(sql);
      skipSyncs(sql);

      const recovered = await recoverJournal(sql, cache, { dir: realDir, fileName, snapshotSeq, logger, recover: options.recover });
      const live = recovered.segments;
      const active = live.length > 0 ? live[live.length - 1] : undefined;
      const older = live.slice(0, -1);
      // Segments wholly inside the snapshot: a crash came between its rename and their deletion.
      const covered = older.filter((s) => s.maxSeq <= snapshotSeq);
      const closed = older.filter((s) => s.maxSeq > snapshotSeq);
      for (const s of covered) await unlink(s.path);
      if (covered.length > 0) await fsyncDir(realDir);
      logger.info('store.opened', {
        dir: realDir,
        snapshot_bytes: snapshot?.length ?? 0,
        snapshot_seq: snapshotSeq,
        replayed: recovered.applied,
        last_seq: recovered.lastSeq,
        segments: live.length - covered.length,
      });

      let database: Database | undefined;
      const compactor = new Compactor({
        dir: realDir,
        fileName,
        logger,
        onCompacted: async (segments) => {
          for (const s of segments) {
            await unlink(s).catch((err: NodeJS.ErrnoException) => {
              if (err.code !== 'ENOENT') throw err;
            });
          }
          await fsyncDir(realDir);
          database?.journal.forget(segments);
        },
      });
      const journal = await Journal.open(
        { dir: realDir, fileName, segmentBytes, logger, onSegmentClosed: (p) => database?.handOver([p]) },
        { lastSeq: recovered.lastSeq, active, closed, maxN: recovered.maxN },
      );
      database = new Database(realDir, fileName, sql, journal, compactor, lock, logger, cache, options.holdCompaction === true);
      // Only a store that syncs history.db restores them (without holdCompaction nobody takes them).
      if (options.holdCompaction) database.replayedBodies = recovered.bodies;
      if (!hasMetaTable(cache)) {
        runOp(sql, cache, META_TABLE_SQL, null);
        database.prelude = [[META_TABLE_SQL, null]];
      }
      if (closed.length > 0) database.handOver(closed.map((s) => s.path));
      return database;
    } catch (err) {
      cache?.clear();
      sql?.close();
      await undoLocked?.().catch(() => {});
      await lock.release().catch(() => {});
      throw err;
    }
  }

  /**
   * A database in memory made from `schema` (until `signal` aborts), journaled nowhere (Journal.scratch), holding no directory or lock: the
   * warm-up's practice turn runs the store's code on it (store/scratch.ts), so V8 has compiled that code
   * and sql.js's WebAssembly before the first chat. Its name says what it is to whoever logs it.
   */
  static async scratch(schema: string, signal?: AbortSignal): Promise<Database> {
    const SQL = await loadSqlJs();
    const sql = new SQL.Database();
    sql.run('PRAGMA journal_mode = MEMORY');
    keepLock(sql);
    skipSyncs(sql);
    // A statement a turn of the event loop: the whole schema in one exec held the loop 18-109 ms here.
    try {
      for (const statement of sql.iterateStatements(schema)) {
        try {
          statement.step();
        } finally {
          statement.free();
        }
        await new Promise((resolve) => setImmediate(resolve));
        signal?.throwIfAborted();
      }
    } catch (error) {
      sql.close();
      throw error;
    }
    const compactor = new Compactor({ dir: '', fileName: '', logger: nullLogger, onCompacted: async () => undefined });
    const lock: DirLock = { dir: '', file: '', release: async () => undefined };
    return new Database('', SCRATCH_NAME, sql, Journal.scratch(nullLogger), compactor, lock, nullLogger, new StatementCache(sql), false);
  }

  /** The statements prepared so far (their text), least recently used first. */
  statementTexts(): string[] {
    return this.cache.texts();
  }

  /**
   * Prepares these statements ahead of their first use (the practice turn's, on the scratch database:
   * the same text, the same schema), without running them; one that does not prepare here is skipped.
   */
  prepareAhead(texts: readonly string[]): void {
    this.assertOpen();
    this.settle();
    for (const text of texts) {
      try {
        this.cache.prepare(text);
      } catch {
        // Not a statement of this schema: its first use says so to whom it concerns.
      }
    }
  }

  /**
   * Runs `fn` (synchronous) as one transaction: its statements apply in memory at once and are
   * journaled as one record. Resolves with fn's result once the record is durable. If fn throws, or
   * any statement in it fails (even if fn catches that), everything is rolled back, nothing is
   * journaled and the promise rejects. `deferSync`: the record is written but waits for the next
   * fdatasync of the journal (Journal.append), which its writer asks for (`flush()`) before anything
   * reveals it; `written()` tells when a killed process can no longer lose it.
   */
  write<T>(fn: (tx: WriteTx) => T, options?: WriteOptions): Promise<T> {
    if (this.inWrite) throw new Error('write() called inside another write(); use the tx you were given');
    if (this.closing) return Promise.reject(new Error('the store is closed'));
    const failed = this.journal.failed;
    if (failed) return Promise.reject(failed);
    // After a full disk, earlier records wait to be written: they go first, and while the disk still
    // refuses them this write fails without touching the database. Not applied at once, it is then
    // synced itself (no deferSync): its writer waits for it before anything reads it.
    if (this.journal.owesWrites) return this.journal.retry().then(() => this.write(fn));
    // Record order is apply order: the planned writes journaled before this one go first.
    this.settle();

    const ops: Op[] = [];
    const bodies: KeyedBody[] = [];
    let open = true;
    let statementError: unknown;
    const check = () => {
      if (!open) throw new Error('this transaction is over; use the tx only inside its write() callback');
    };
    const tx: WriteTx = {
      run: (sql, params) => {
        check();
        const values = normalizeParams(params);
        try {
          this.watches.saw(sql);
          const changes = runOp(this.sql, this.cache, sql, values);
          ops.push([sql, values]);
          return { changes };
        } catch (err) {
          statementError ??= err;
          throw err;
        }
      },
      get: <R>(sql: string, params?: readonly SqlParamInput[]) => {
        check();
        return queryOne(this.cache, sql, normalizeParams(params)) as R | undefined;
      },
      all: <R>(sql: string, params?: readonly SqlParamInput[]) => {
        check();
        return queryAll(this.cache, sql, normalizeParams(params)) as R[];
      },
      keepBodies: (kept) => {
        check();
        bodies.push(...kept);
      },
    };

    let result: T;
    this.inWrite = true;
    try {
      result = this.transaction(() => {
        const value = fn(tx);
        if (isThenable(value)) throw new Error('write() callbacks must be synchronous');
        if (statementError !== undefined) throw statementError;
        if (ops.length > 0) for (const [sql, params] of this.riders) tx.run(sql, params ?? undefined);
        if (statementError !== undefined) throw statementError;
        return value;
      });
      if (ops.length > 0) this.riders = [];
    } catch (err) {
      return Promise.reject(err);
    } finally {
      open = false;
      this.inWrite = false;
    }
    let durable: Promise<void>;
    if (ops.length > 0 || bodies.length > 0) {
      durable = this.journal.append(this.prelude.length > 0 ? [...this.prelude, ...ops] : ops, bodies, options?.deferSync === true);
      this.prelude = [];
    } else durable = this.journal.barrier();
    return durable.then(() => result);
  }

  /**
   * A write whose statements are known before they run (`ops`, with the history.db bodies it journals):
   * as write(), but its record is encoded and handed to the journal's file first (its write asked at once
   * when no write is in flight, Journal.append's `now`), and its statements are applied behind it: once
   * the fdatasync that covers the record is asked (the main thread waits for it then), or before anything
   * else reads or writes sql.js (`settle`: every reader and writer sees the database as if they had been
   * applied at once), in record order. Resolves once the record is durable and its statements applied.
   * A statement or check that fails rolls the transaction back, and the record is voided
   * (Journal.voidRecord: replay skips it); the promise rejects with the failure once the void record is
   * durable, so nothing told of the failure can be undone by a restart. `ready` runs first (reads only)
   * and may throw: the write is then refused and journals nothing. Every write statement is shown to the
   * watches (ReadMemo) here, when journaled: a memo read after it reads again, through the barrier.
   */
  writePlanned(ops: readonly PlannedOp[], bodies: readonly KeyedBody[], options?: WriteOptions, ready?: () => void): Promise<void> {
    if (this.inWrite) throw new Error('write() called inside another write(); use the tx you were given');
    // Not handed off first while the journal is failed, closed or owes a full disk's records: write() says
    // why, or writes them first.
    if (!this.handsOffNow || ops.length === 0) {
      return this.write((tx) => {
        ready?.();
        runPlanned(tx, ops);
        tx.keepBodies(bodies);
      }, options);
    }
    let planned: Op[];
    try {
      ready?.();
      planned = packedMap(ops, (op) => [op.sql, normalizeParams(op.params)]);
    } catch (err) {
      return Promise.reject(err);
    }
    const { prelude, riders } = this;
    const durable = this.journal.append(
      prelude.length > 0 ? [...prelude, ...planned, ...riders] : riders.length > 0 ? [...planned, ...riders] : planned,
      [...bodies],
      options?.deferSync === true,
      true,
    );
    const entry: Pending = { ops, planned, prelude, riders, seq: this.journal.lastSeq };
    this.prelude = [];
    this.riders = [];
    for (let i = 0; i < planned.length; i += 1) this.watches.saw(planned[i][0]);
    for (let i = 0; i < riders.length; i += 1) this.watches.saw(riders[i][0]);
    this.pending.push(entry);
    return durable.then(() => {
      this.settle();
      return entry.failed;
    });
  }

  /**
   * Whether writePlanned hands a record off now (its statements behind it). Not while the journal is
   * failed, closed or owes a full disk's records: it then takes write()'s road, whose callback runs only
   * once the owed records are written, so a caller must not fix anything about the rows (a message's seq:
   * MessagesRepo.appendMany) before then.
   */
  get handsOffNow(): boolean {
    return !(this.closing || this.journal.failed || this.journal.owesWrites);
  }

  /**
   * The barrier: applies the planned writes whose statements wait (writePlanned), in record order. Called
   * before any other use of sql.js, and by the journal as it asks an fdatasync (nothing else then runs).
   */
  private settle(): void {
    if (this.pending.length === 0) return;
    const queue = this.pending;
    this.pending = [];
    if (queue.length > 1 && this.applyTogether(queue)) return;
    for (let i = 0; i < queue.length; i += 1) this.apply(queue[i]);
  }

  /**
   * Several planned writes' statements in one transaction (a turn's user message and reply, both waiting
   * at the reply's fdatasync): one BEGIN and COMMIT, and the pages they share (the conversation's row, its
   * indexes, the messages' last leaf, `sqlite_sequence`) copied to the rollback journal and written to
   * sql.js's file once, not once each. False when anything in it fails: it is rolled back whole, and each
   * is then applied alone (apply), so the one that fails is voided and the others kept, as before.
   */
  private applyTogether(queue: readonly Pending[]): boolean {
    this.inWrite = true;
    try {
      this.transaction(() => {
        for (let q = 0; q < queue.length; q += 1) this.runPending(queue[q]);
      });
      return true;
    } catch {
      return false;
    } finally {
      this.inWrite = false;
    }
  }

  /** A planned write's statements, its checks, then its riders (inside a transaction). */
  private runPending(entry: Pending): void {
    const { ops, planned, riders } = entry;
    checkEach(ops, (op, i) => runOp(this.sql, this.cache, op.sql, planned[i][1]));
    for (let i = 0; i < riders.length; i += 1) runOp(this.sql, this.cache, riders[i][0], riders[i][1]);
  }

  /**
   * One planned write's statements in one transaction. Failing (nothing else ran since its record, so
   * what fails here failed at once before: a check, a constraint, sql.js itself), it is rolled back and
   * its record voided; the prelude and riders it journaled go with the next record.
   */
  private apply(entry: Pending): void {
    const { riders } = entry;
    this.inWrite = true;
    try {
      this.transaction(() => this.runPending(entry));
    } catch (err) {
      this.prelude = [...entry.prelude, ...this.prelude];
      this.riders = [...riders, ...this.riders];
      const fail = (): Promise<never> => Promise.reject(err);
      entry.failed = this.journal.voidRecord(entry.seq).then(fail, fail);
      // Awaited by its writer once its record is durable; this only keeps it from counting as unhandled meanwhile.
      entry.failed.catch(() => undefined);
    } finally {
      this.inWrite = false;
    }
  }

  /**
   * A count every write statement `touches` says may change what a reader kept is shown before it runs
   * (read-memo.ts): while it stays, nothing it watches was written.
   */
  watch(touches: (sql: string) => boolean): WriteWatch {
    return this.watches.add(touches);
  }

  /** Inside a write's transaction (its callback, or a planned write's statements and checks). */
  get writing(): boolean {
    return this.inWrite;
  }

  /** Runs `body` between BEGIN and COMMIT; if it throws, rolls back and throws that. */
  private transaction<T>(body: () => T): T {
    runControl(this.cache, 'BEGIN');
    try {
      const value = body();
      runControl(this.cache, 'COMMIT');
      return value;
    } catch (err) {
      try {
        this.sql.run('ROLLBACK');
      } catch {
        // Some errors end the transaction themselves.
      }
      throw err;
    }
  }

  all<T = Record<string, unknown>>(sql: string, params?: readonly SqlParamInput[]): T[] {
    this.assertOpen();
    this.settle();
    return queryAll(this.cache, sql, normalizeParams(params)) as T[];
  }

  get<T = Record<string, unknown>>(sql: string, params?: readonly SqlParamInput[]): T | undefined {
    this.assertOpen();
    this.settle();
    return queryOne(this.cache, sql, normalizeParams(params)) as T | undefined;
  }

  /**
   * Why writes fail right now, or null when they work. Records a full disk refused are retried first,
   * so asking also recovers once space is back.
   */
  async problem(): Promise<string | null> {
    if (this.journal.owesWrites) await this.journal.retry().catch(() => {});
    return this.journal.failed?.message ?? this.journal.degraded;
  }

  /**
   * Runs `sql` in the next write transaction that has statements of its own, journaled with them:
   * bookkeeping not worth a record (and an fsync) of its own, which may wait as long as nothing is written.
   */
  withNextWrite(sql: string, params: readonly SqlParamInput[]): void {
    this.riders.push([sql, normalizeParams(params)]);
  }

  /** The bodies journaled by the records replayed at open (once: they are dropped from memory). */
  takeReplayedBodies(): KeyedBody[] {
    const bodies = this.replayedBodies;
    this.replayedBodies = [];
    return bodies;
  }

  /**
   * Lets closed segments go to the compactor (holdCompaction): each time, `beforeCompaction` first
   * makes durable every body written to history.db so far, so compaction never deletes a record that is
   * still a body's only durable copy. Segments closed meanwhile waited; they go now.
   */
  releaseCompaction(beforeCompaction: () => Promise<void>): void {
    this.beforeCompaction = beforeCompaction;
    this.handOver([]);
  }

  /** Resolves once segments closed so far went to the compactor (or failed to, logged). */
  handedOver(): Promise<void> {
    return this.handoff;
  }

  private handOver(segments: readonly string[]): void {
    this.held.push(...segments);
    this.handoff = this.handoff.then(async () => {
      const ready = this.beforeCompaction;
      if (!ready || this.held.length === 0) return;
      try {
        await ready();
      } catch (err) {
        // They stay held (their records stay replayable) and go with the next segment closed.
        this.logger.warn('store.compaction_held', { segments: this.held.length, error: err instanceof Error ? err.message : String(err) });
        return;
      }
      const paths = this.held;
      this.held = [];
      this.compactor.enqueue(paths);
    });
  }

  /**
   * Resolves once every write made so far is in the journal's file, not yet necessarily fdatasynced
   * (Journal.written): what a process killed from then on cannot lose. Undefined while a full disk
   * leaves records owed (a write made then is applied later): wait for the write's own promise.
   */
  written(): Promise<void> | undefined {
    return this.journal.written();
  }

  /** Resolves once every write made so far is durable (a deferred one's sync is asked for now). */
  flush(): Promise<void> {
    return this.journal.barrier();
  }

  /** Resolves once every write a read can see is durable: as flush(), without retrying a full disk's owed writes. */
  readable(): Promise<void> {
    return this.journal.barrier(false);
  }

  /**
   * Folds the whole journal into the snapshot now (in the worker): closes the active segment and
   * waits until every closed segment is compacted. Writes may go on meanwhile.
   */
  async compact(): Promise<void> {
    this.assertOpen();
    await this.journal.barrier();
    await this.journal.rotate();
    await this.handoff;
    await this.compactor.drain();
  }

  /**
   * Writes the database as one SQLite file to `destFile` (which must not exist), holding every write
   * acknowledged before the call: the whole journal is folded into the snapshot (compact(), in the
   * worker, so the event loop never pays for it) and that file is copied. The copy reads through a
   * handle opened first: a compaction finishing meanwhile renames a newer snapshot in, and this one
   * stays whole. Writes go on meanwhile (backups: store/backup.ts).
   */
  async copySnapshot(destFile: string): Promise<void> {
    await this.compact();
    const handle = await open(path.join(this.dir, this.fileName), 'r');
    try {
      await copyFromHandle(handle, destFile);
    } finally {
      await handle.close();
    }
  }

  /**
   * The seq of the last write transaction journaled (synced or not; a planned write's statements applied
   * or waiting behind its record, which every read applies first). Every change to the database's rows is
   * such a transaction, so a reader that saw it at one value knows nothing was written since while it
   * stays the same (agent/history-cache.ts).
   */
  get lastWrite(): number {
    return this.journal.lastSeq;
  }

  stats(): DatabaseStats {
    return {
      journalBytes: this.journal.totalBytes,
      segments: this.journal.segmentCount,
      compactions: this.compactor.completed,
      lastSeq: this.journal.lastSeq,
      flushes: this.journal.flushes,
    };
  }

  /** Flushes, waits for a running compaction, closes the journal and releases the directory lock. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    // Nothing is journaled from now on (writes are refused): what waits is applied before the handle goes.
    this.settle();
    try {
      await this.journal.barrier().catch((err: unknown) => {
        this.logger.error('store.close_flush_failed', { error: err instanceof Error ? err.message : String(err) });
      });
      await this.compactor.stop();
      await this.journal.close();
    } finally {
      this.cache.clear();
      this.sql.close();
      await this.lock.release();
      this.logger.info('store.closed', { dir: this.dir });
    }
  }

  /** Not closed (nor closing): what is known of its rows in memory may be told. */
  get isOpen(): boolean {
    return this.closing === null;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error('the store is closed');
  }
}
