// The rows of service.db that refer to a body in history.db by its key (`body_key`): one list, for every
// place that must know which bodies are referenced (the open's check and salvage of history.db, the
// bodies put back from the journal, the sweep of bodies nobody refers to). A table missing here would
// have its bodies swept while still needed.
import type { Database } from './database';
import type { BodyRef } from './history/protocol';

/**
 * The role a webhook delivery's body is stored with in history.db: a tool output's, which is never indexed
 * for search (the reply it carries is, as its message).
 */
export const DELIVERY_BODY_ROLE = 'tool';

interface Referrer {
  table: string;
  /** SQL for the conversation and role its bodies are stored with (what a salvage writes back); none for bodies only waiting to be deleted. */
  salvaged?: { conversation: string; role: string };
}

const REFERRERS: readonly Referrer[] = [
  { table: 'messages', salvaged: { conversation: 'conversation_id', role: 'role' } },
  // Bodies waiting for the history maintenance to delete them.
  { table: 'history_trash' },
  // A webhook message waiting in the inbox (store/webhooks.ts accept).
  { table: 'webhook_inbox', salvaged: { conversation: 'conversation_id', role: "'user'" } },
  // A webhook delivery's body, until it is delivered (store/webhooks.ts).
  { table: 'webhook_deliveries', salvaged: { conversation: 'conversation_id', role: `'${DELIVERY_BODY_ROLE}'` } },
];

/** Keys per query: well under SQLite's bound-parameter limit. */
const CHUNK = 500;

export function hasColumn(db: Database, table: string, name: string): boolean {
  // A SELECT of the table-valued function: read-only by its first word, and no rows (not a refusal) for a missing table (review20b).
  return db.get('SELECT 1 AS present FROM pragma_table_info(?) WHERE name = ?', [table, name]) !== undefined;
}

/** The referring tables this schema has (a store opened with older migrations lacks the later ones' columns). */
function referrers(db: Database): Referrer[] {
  return REFERRERS.filter((r) => hasColumn(db, r.table, 'body_key'));
}

/** The highest body key service.db refers to. */
export function highestReferencedKey(db: Database): number {
  const parts = referrers(db).map((r) => `SELECT max(body_key) AS k FROM ${r.table}`);
  return db.get<{ k: number | null }>(`SELECT max(k) AS k FROM (${parts.join(' UNION ALL ')})`)?.k ?? 0;
}

/** Of the keys from `from` to `to`, those service.db refers to. */
export function referencedBetween(db: Database, from: number, to: number): Set<number> {
  const tables = referrers(db);
  const sql = tables.map((r) => `SELECT body_key AS k FROM ${r.table} WHERE body_key BETWEEN ? AND ?`).join(' UNION ALL ');
  return new Set(
    db
      .all<{ k: number }>(
        sql,
        tables.flatMap(() => [from, to]),
      )
      .map((row) => row.k),
  );
}

/** Of `keys`, those service.db refers to. */
export function referencedAmong(db: Database, keys: readonly number[]): Set<number> {
  const tables = referrers(db);
  const found = new Set<number>();
  for (let i = 0; i < keys.length; i += CHUNK) {
    const part = keys.slice(i, i + CHUNK);
    const list = part.map(() => '?').join(', ');
    const sql = tables.map((r) => `SELECT body_key AS k FROM ${r.table} WHERE body_key IN (${list})`).join(' UNION ');
    for (const row of db.all<{ k: number }>(
      sql,
      tables.flatMap(() => part),
    ))
      found.add(row.k);
  }
  return found;
}

/**
 * Every body a salvage of history.db must keep (bodies waiting to be deleted aside), by key; with `above`,
 * only those with a higher key (the ones a history.db ending there lost).
 */
export function salvagedRefs(db: Database, above = 0): BodyRef[] {
  const parts = referrers(db).flatMap((r) =>
    r.salvaged ? [`SELECT body_key AS key, ${r.salvaged.conversation} AS conversation_id, ${r.salvaged.role} AS role FROM ${r.table} WHERE body_key > ?`] : [],
  );
  return db.all<BodyRef>(
    `SELECT key, conversation_id, role FROM (${parts.join(' UNION ALL ')}) ORDER BY key`,
    parts.map(() => above),
  );
}
