import type { BlobReferences } from './blob-guard';
import type { Database } from './database';

/**
 * Every row that refers to a blob, by its hash: an attachment (an upload, sent or not; a tool's image)
 * and a turn's file change (the file's before-image and the bytes written). A new referrer is added
 * here, and its rows' puts go through `blobs.holding` (blob-guard.ts).
 */
const REFERRERS = [
  { table: 'attachments', column: 'hash' },
  { table: 'file_changes', column: 'before_hash' },
  { table: 'file_changes', column: 'after_hash' },
] as const;

/** Up to this many hashes are looked up one by one; more, every referenced hash is read (no index on these columns). */
const ONE_BY_ONE = 16;

/** Rows read in one synchronous stretch of a full read (about 1 ms per 1,000 here); the loop is free between two. */
export const SLICE_ROWS = 2_000;

/** Below every rowid (SQLite's are 64-bit, JavaScript reads them as numbers). */
const BEFORE_FIRST = Number.MIN_SAFE_INTEGER;

/** How a full read is cut: rows per slice, and what runs between two (a turn of the event loop by default). */
export interface SliceOptions {
  sliceRows?: number;
  between?: () => Promise<void>;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The referrers by table, each read in rowid order: `rowid > ?` a slice at a time (a deletion meanwhile skips no row). */
const SLICES = [...new Set(REFERRERS.map((r) => r.table))].map((table) => {
  const columns = REFERRERS.filter((r) => r.table === table).map((r) => r.column);
  return { columns, sql: `SELECT rowid AS k, ${columns.join(', ')} FROM ${table} WHERE rowid > ? ORDER BY rowid LIMIT ?` };
});

/**
 * Of `hashes`, those no row of the database refers to. Many hashes: every referrer's rows are read in
 * slices of `sliceRows`, then `hashes` are sifted as many at a time, `between` awaited between two, so the
 * loop never stops for the whole read. Rows written meanwhile may be missed (a rowid freed at a table's
 * end is given again); BlobGuard.collect leaves their hashes alone (held or put since it started), which
 * is why the read may be sliced.
 */
export async function unreferencedHashes(db: Pick<Database, 'get' | 'all'>, hashes: readonly string[], options: SliceOptions = {}): Promise<string[]> {
  if (hashes.length <= ONE_BY_ONE) {
    const sql = REFERRERS.map(({ table, column }) => `SELECT 1 AS found FROM ${table} WHERE ${column} = ?`).join(' UNION ALL ') + ' LIMIT 1';
    return hashes.filter(
      (hash) =>
        db.get(
          sql,
          REFERRERS.map(() => hash),
        ) === undefined,
    );
  }
  const { sliceRows = SLICE_ROWS, between = nextTurn } = options;
  const named = new Set<string>();
  for (const { columns, sql } of SLICES) {
    let after = BEFORE_FIRST;
    for (;;) {
      const rows = db.all<Record<string, unknown>>(sql, [after, sliceRows]);
      for (const row of rows) {
        for (const column of columns) {
          const hash = row[column];
          if (typeof hash === 'string') named.add(hash);
        }
      }
      if (rows.length < sliceRows) break;
      after = rows[rows.length - 1]!.k as number;
      await between();
    }
  }
  const unnamed: string[] = [];
  for (let i = 0; i < hashes.length; i += sliceRows) {
    if (i > 0) await between();
    for (const hash of hashes.slice(i, i + sliceRows)) if (!named.has(hash)) unnamed.push(hash);
  }
  return unnamed;
}

/** The database's rows as a blob collection asks for them (BlobReferences); `slices` for tests and benches. */
export function blobReferences(db: Database, slices?: SliceOptions): BlobReferences {
  return { unreferenced: (hashes) => unreferencedHashes(db, hashes, slices), durable: () => db.flush() };
}
