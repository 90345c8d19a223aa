// Worker thread entry (bundled to dist/compact-worker.js): folds closed journal segments into the
// snapshot, so the main thread never pays for db.export().
import { closeSync, fsyncSync, openSync, readlinkSync, renameSync, rmSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import path from 'node:path';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { CompactionDone, CompactionJob, CompactionResult } from './compaction';
import { scanRecords } from './record';
import { readSnapshotSeq, replayRecords, writeSnapshotSeq } from './replay';
import { syncDirectorySync } from '../platform/directory-sync';
import { PRIVATE_FILE_MODE } from '../platform/file-modes';
import { stayUntilTerminated } from '../platform/worker-thread';
import type { ReplayFailure } from './replay';
import { keepLock, loadSqlJs } from './sqljs';
import { queryOne, StatementCache } from './statements';
import type { Database as SqlJsDatabase } from 'sql.js';

async function readIfExists(file: string): Promise<Buffer | null> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

const WRITE_CHUNK = 1 << 20;

// The snapshot is written synchronously, in chunks, on purpose: the copying then happens on this
// lower-priority thread rather than in the process-wide libuv pool, and the thread has nothing else to do.
function writeDurably(file: string, data: Uint8Array): void {
  const fd = openSync(file, 'w', PRIVATE_FILE_MODE);
  try {
    let offset = 0;
    while (offset < data.length) {
      offset += writeSync(fd, data, offset, Math.min(WRITE_CHUNK, data.length - offset), offset);
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * A snapshot that is mostly free pages (message bodies moved to history.db, big deletions) is rebuilt
 * without them, so the next open does not load them into memory. VACUUM keeps every key (nothing of
 * ours uses rowids; replayed records find rows by their keys).
 */
function dropFreePages(db: SqlJsDatabase, cache: StatementCache): void {
  const pages = Number(queryOne(cache, 'PRAGMA page_count', [])?.page_count ?? 0);
  const free = Number(queryOne(cache, 'PRAGMA freelist_count', [])?.freelist_count ?? 0);
  if (free * 4 <= pages) return;
  cache.clear();
  db.run('VACUUM');
}

export async function compact(job: CompactionJob): Promise<CompactionDone> {
  const snapshotPath = path.join(job.dir, job.fileName);
  const tmpPath = `${snapshotPath}.tmp`;
  const SQL = await loadSqlJs();
  const snapshot = await readIfExists(snapshotPath);
  const db = new SQL.Database(snapshot ?? undefined);
  const cache = new StatementCache(db);
  let out: Uint8Array;
  let seq: number;
  let applied = 0;
  const failures: ReplayFailure[] = [];
  try {
    const snapshotSeq = readSnapshotSeq(cache);
    keepLock(db);
    seq = snapshotSeq;
    let prevRecordSeq = 0;
    for (const segment of job.segments) {
      const parsed = scanRecords(await readFile(segment), prevRecordSeq);
      // Closed segments were fully fsynced by this process; damage here must not be silently folded in.
      const bad = parsed.damaged[0] ?? parsed.tail;
      if (bad) throw new Error(`${path.basename(segment)}: ${bad.problem} at byte ${bad.offset}`);
      if (parsed.records.length > 0) prevRecordSeq = parsed.records[parsed.records.length - 1].seq;
      const result = replayRecords(db, cache, parsed.records, seq);
      applied += result.applied;
      failures.push(...result.failures);
      seq = result.lastSeq;
    }
    if (snapshot && seq === snapshotSeq) {
      return { ok: true, seq, snapshotBytes: snapshot.length, wrote: false, applied, failures };
    }
    writeSnapshotSeq(db, cache, seq);
    dropFreePages(db, cache);
    out = db.export();
  } finally {
    cache.clear();
    db.close();
  }

  try {
    writeDurably(tmpPath, out);
  } catch (err) {
    // A half-written snapshot on a full disk would only hold on to the space the journal needs.
    rmSync(tmpPath, { force: true });
    throw err;
  }
  renameSync(tmpPath, snapshotPath);
  syncDirectorySync(job.dir);
  return { ok: true, seq, snapshotBytes: out.length, wrote: true, applied, failures };
}

/**
 * Linux lets one thread of a process be niced alone: with this, on a busy machine the scheduler
 * prefers the main thread (the editor's extension host, the service's event loop) over compaction.
 * Best effort; elsewhere the worker runs at normal priority.
 */
function lowerThreadPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isSafeInteger(tid) && tid > 0 && tid !== process.pid) setPriority(tid, 10);
  } catch {
    // No /proc, or not permitted: keep the default priority.
  }
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  // runCompactionWorker terminates this thread on its answer.
  stayUntilTerminated(port);
  lowerThreadPriority();
  compact(workerData as CompactionJob).then(
    (result) => port.postMessage(result satisfies CompactionResult),
    (err: unknown) => {
      const error = err instanceof Error ? err.message : String(err);
      port.postMessage({ ok: false, error } satisfies CompactionResult);
    },
  );
}
