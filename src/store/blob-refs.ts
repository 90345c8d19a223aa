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

/** Up to this many hashes are looked up one by one; more, every referenced hash is read at once (no index on these columns). */
const ONE_BY_ONE = 16;

/** Of `hashes`, those a row of the database refers to. */
export function referencedHashes(db: Pick<Database, 'get' | 'all'>, hashes: readonly string[]): Set<string> {
  if (hashes.length <= ONE_BY_ONE) {
    const sql = REFERRERS.map(({ table, column }) => `SELECT 1 AS found FROM ${table} WHERE ${column} = ?`).join(' UNION ALL ') + ' LIMIT 1';
    return new Set(
      hashes.filter(
        (hash) =>
          db.get(
            sql,
            REFERRERS.map(() => hash),
          ) !== undefined,
      ),
    );
  }
  const sql = REFERRERS.map(({ table, column }) => `SELECT ${column} AS hash FROM ${table} WHERE ${column} IS NOT NULL`).join(' UNION ALL ');
  const all = new Set(db.all<{ hash: string }>(sql).map((row) => row.hash));
  return new Set(hashes.filter((hash) => all.has(hash)));
}

/** The database's rows as a blob collection asks for them (BlobReferences). */
export function blobReferences(db: Database): BlobReferences {
  return { referenced: (hashes) => referencedHashes(db, hashes), durable: () => db.flush() };
}
