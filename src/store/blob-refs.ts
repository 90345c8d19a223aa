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

/** Up to this many hashes are looked up by SQLite (`IN`); more, every referenced hash is read (no index on these columns). */
const FEW = 16;

/** A lookup of a few hashes passes over this many times `sliceRows` rows a stretch: SQLite filters them itself, faster than rows read out (about 1.5 ms for 4,000 here). */
const LOOKUP_SLICES = 2;

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

/**
 * The referrers by table, each read in rowid order a slice at a time, `rowid > ?` (a deletion meanwhile
 * skips no row): `sql` reads a slice's rows, `end` finds the last rowid of a slice, `matching(n)` reads the
 * rows of a slice (to the table's end unless `bounded`) naming one of n hashes.
 */
const SLICES = [...new Set(REFERRERS.map((r) => r.table))].map((table) => {
  const columns = REFERRERS.filter((r) => r.table === table).map((r) => r.column);
  return {
    columns,
    sql: `SELECT rowid AS k, ${columns.join(', ')} FROM ${table} WHERE rowid > ? ORDER BY rowid LIMIT ?`,
    end: `SELECT rowid AS k FROM ${table} WHERE rowid > ? ORDER BY rowid LIMIT 1 OFFSET ?`,
    matching: (n: number, bounded: boolean) => {
      const marks = Array.from({ length: n }, () => '?').join(', ');
      return `SELECT ${columns.join(', ')} FROM ${table} WHERE rowid > ?${bounded ? ' AND rowid <= ?' : ''} AND (${columns.map((c) => `${c} IN (${marks})`).join(' OR ')})`;
    },
  };
});

/** The hashes of `rows` (a slice's, with the columns `columns`) added to `named`. */
function addNamed(named: Set<string>, rows: readonly Record<string, unknown>[], columns: readonly string[]): void {
  for (const row of rows) {
    for (const column of columns) {
      const hash = row[column];
      if (typeof hash === 'string') named.add(hash);
    }
  }
}

/**
 * Of `hashes`, those no row of the database refers to. A few: SQLite picks the rows naming them out of
 * `sliceRows * LOOKUP_SLICES` rows at a time. Many: every referrer's rows are read in
 * slices of `sliceRows`, then `hashes` are sifted as many at a time, `between` awaited between two, so the
 * loop never stops for the whole read. Rows written meanwhile may be missed (a rowid freed at a table's
 * end is given again); BlobGuard.collect leaves their hashes alone (held or put since it started), which
 * is why the read may be sliced.
 */
export async function unreferencedHashes(db: Pick<Database, 'get' | 'all'>, hashes: readonly string[], options: SliceOptions = {}): Promise<string[]> {
  const { sliceRows = SLICE_ROWS, between = nextTurn } = options;
  const named = new Set<string>();
  if (hashes.length === 0) return [];
  if (hashes.length <= FEW) {
    // An unsent upload's expiry: SQLite picks the few out, a window of rows at a time.
    const window = sliceRows * LOOKUP_SLICES;
    for (const { columns, end, matching } of SLICES) {
      const names = columns.flatMap(() => hashes);
      let after = BEFORE_FIRST;
      for (;;) {
        const last = db.get<{ k: number }>(end, [after, window - 1])?.k;
        const bounds = last === undefined ? [after] : [after, last];
        addNamed(named, db.all<Record<string, unknown>>(matching(hashes.length, last !== undefined), [...bounds, ...names]), columns);
        if (last === undefined) break;
        after = last;
        await between();
      }
    }
    return hashes.filter((hash) => !named.has(hash));
  }
  for (const { columns, sql } of SLICES) {
    let after = BEFORE_FIRST;
    for (;;) {
      const rows = db.all<Record<string, unknown>>(sql, [after, sliceRows]);
      addNamed(named, rows, columns);
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
