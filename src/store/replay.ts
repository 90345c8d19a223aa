// Shared by the main thread (start-up replay) and the compaction worker, so a record means the same
// thing in both places.
import { open, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Database as SqlJsDatabase } from 'sql.js';
import { voidedSeqs } from './record';
import type { JournalRecord } from './record';
import { queryOne, runControl, runOp, StatementCache } from './statements';
import { directorySyncUnsupported } from '../platform/directory-sync';

/** Same text as migration 1, so whichever creates `meta` first, the schema is identical. */
export const META_TABLE_SQL = 'CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)';
/** The last journal seq contained in a snapshot. Written only by compaction; `store.` keys are reserved. */
export const JOURNAL_SEQ_KEY = 'store.journal_seq';

export interface SegmentFile {
  n: number;
  path: string;
}

export function segmentPath(dir: string, fileName: string, n: number): string {
  return path.join(dir, `${fileName}.journal.${n}`);
}

/** Journal segments of `fileName` in `dir`, oldest first. */
export async function listSegments(dir: string, fileName: string): Promise<SegmentFile[]> {
  const prefix = `${fileName}.journal.`;
  const out: SegmentFile[] = [];
  for (const name of await readdir(dir)) {
    if (!name.startsWith(prefix)) continue;
    const suffix = name.slice(prefix.length);
    if (!/^[0-9]{1,15}$/.test(suffix)) continue;
    out.push({ n: Number(suffix), path: path.join(dir, name) });
  }
  return out.sort((a, b) => a.n - b.n);
}

function tableExists(cache: StatementCache, name: string): boolean {
  return queryOne(cache, "SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = ?", [name]) !== undefined;
}

export function hasMetaTable(cache: StatementCache): boolean {
  return tableExists(cache, 'meta');
}

/** The journal seq a snapshot already contains (0 for none). */
export function readSnapshotSeq(cache: StatementCache): number {
  if (!tableExists(cache, 'meta')) return 0;
  const row = queryOne(cache, 'SELECT value FROM meta WHERE key = ?', [JOURNAL_SEQ_KEY]);
  const seq = row ? Number(row.value) : 0;
  return Number.isSafeInteger(seq) && seq > 0 ? seq : 0;
}

export function writeSnapshotSeq(db: SqlJsDatabase, cache: StatementCache, seq: number): void {
  db.run(META_TABLE_SQL);
  runOp(db, cache, 'INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)', [JOURNAL_SEQ_KEY, String(seq)]);
}

/** Applies one record as one transaction; on error nothing of it stays and the error is thrown. */
export function applyRecord(db: SqlJsDatabase, cache: StatementCache, record: JournalRecord): void {
  runControl(cache, 'BEGIN');
  try {
    for (const [sql, params] of record.ops) runOp(db, cache, sql, params);
    runControl(cache, 'COMMIT');
  } catch (err) {
    try {
      db.run('ROLLBACK');
    } catch {
      // The failed statement may already have ended the transaction.
    }
    throw err;
  }
}

export interface ReplayFailure {
  seq: number;
  message: string;
}

/**
 * Applies records with seq > afterSeq, in order. A record that fails to apply (it succeeded when
 * written, so this means a bug or a damaged snapshot) is skipped and reported rather than dropping
 * every record after it. A record a later void record names (`voids`: its statements failed live and
 * were rolled back) is skipped, and so is the void record: `records` must hold both (they are always in
 * one segment).
 */
export function replayRecords(
  db: SqlJsDatabase,
  cache: StatementCache,
  records: readonly JournalRecord[],
  afterSeq: number,
): { applied: number; skipped: number; lastSeq: number; failures: ReplayFailure[] } {
  let applied = 0;
  let skipped = 0;
  let lastSeq = afterSeq;
  const failures: ReplayFailure[] = [];
  const voided = voidedSeqs(records);
  for (const record of records) {
    if (record.seq <= afterSeq) {
      skipped++;
      continue;
    }
    if (voided.has(record.seq) || record.voids !== undefined) {
      lastSeq = record.seq;
      continue;
    }
    try {
      applyRecord(db, cache, record);
      applied++;
    } catch (err) {
      failures.push({ seq: record.seq, message: err instanceof Error ? err.message : String(err) });
    }
    lastSeq = record.seq;
  }
  return { applied, skipped, lastSeq, failures };
}

/** Makes a rename, create or delete in `dir` durable. Not possible on Windows, where it is skipped. */
export async function fsyncDir(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (err) {
    if (!directorySyncUnsupported(err)) throw err;
  } finally {
    await handle?.close();
  }
}
