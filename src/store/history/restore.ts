// The open's side of one durable commit per message (issue 25): a body is written to history.db without
// an fsync and journaled with the rows that refer to it (WriteTx.keepBodies), so after a power loss
// history.db may lack the bodies of its last commits while the journal holds them. They are put back
// here, before anything new is written. history.db is synced (a "sync mark" committed with an fsync)
// before a journal segment is compacted, so the journal always covers what history.db may have lost.
import type { Database, WriteTx } from '../database';
import type { Logger } from '../../log/logger';
import type { HistoryStore } from './history-store';
import type { KeyedBody } from './protocol';
import { HISTORY_FILE_NAME } from './history-store';
import { hasColumn, referencedAmong } from '../body-refs';

/** service.db's meta key for the last history.db sync mark it saw made durable. */
const HISTORY_MARK_KEY = 'history.sync_mark';

/** Whether conversations can have messages whose metadata moved to history.db (migration 18; not in a store opened with older migrations). */
export function hasColdHistory(db: Database): boolean {
  return hasColumn(db, 'conversations', 'cold_seq');
}

/** The last history.db sync mark service.db saw made durable (0: none yet). */
export function seenMark(db: Database): number {
  return Number(db.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [HISTORY_MARK_KEY])?.value ?? 0);
}

/**
 * Puts back into history.db the journaled bodies it lost with its unsynced tail (only those service.db
 * still refers to: a deleted message's body stays deleted); the highest key history.db holds after.
 * A history.db whose sync mark is behind the one service.db saw lost commits it had made durable: that
 * is damage, not a power loss, and is left to the checks that follow (refused, or `--recover`; then
 * `reconcileIfBehind`).
 */
export async function restoreJournaledBodies(db: Database, history: HistoryStore, logger: Logger): Promise<number> {
  const journaled = db.takeReplayedBodies();
  const seen = seenMark(db);
  if (history.markBeforeOpen < seen) {
    logger.error('history.sync_mark_behind', { history_mark: history.markBeforeOpen, seen_mark: seen });
    return history.keysBeforeOpen;
  }
  // By key, the last journaled wins (records are in order). Every journaled body, not only those above
  // history.db's highest key: a group of puts the worker refused (a full disk) while a later group was
  // committed lies below it (fill skips the keys history.db has).
  const missing = new Map<number, KeyedBody>();
  for (const body of journaled) missing.set(body.key, body);
  if (missing.size === 0) return history.keysBeforeOpen;
  const referenced = referencedAmong(db, [...missing.keys()]);
  const wanted = [...missing.values()].filter((b) => referenced.has(b.key));
  // New keys start above every journaled one, even those no longer referred to: a key is never given
  // twice, so a later restore can never mistake an old record's body for a new message's.
  const stored = await history.fill(
    wanted,
    [...missing.keys()].reduce((max, key) => Math.max(max, key), 0),
  );
  if (stored > 0) logger.warn('history.bodies_restored', { from_journal: wanted.length, stored, last_key: history.keysBeforeOpen });
  return wanted.reduce((max, b) => Math.max(max, b.key), history.keysBeforeOpen);
}

/**
 * With history.db's sync mark behind service.db's (restoreJournaledBodies), once the open is not refused
 * (store/index.ts: a refused open changes no row, so the right file put back still opens whole): the
 * conversations' counts brought to the cold rows history.db has (reconcileColdRows).
 */
export async function reconcileIfBehind(db: Database, history: HistoryStore, logger: Logger): Promise<void> {
  if (history.markBeforeOpen >= seenMark(db) || !hasColdHistory(db)) return;
  const { messages, conversations } = await reconcileColdRows(db, history, logger);
  if (messages === 0) return;
  history.damaged ??= `${HISTORY_FILE_NAME} is older than service.db (replaced by an older copy?): ${messages} messages of ${conversations} conversations that had moved there are not in it and are lost; the rest of those conversations reads as before. Restart the service to clear this notice`;
}

/**
 * A history.db that lacks cold rows sql.js no longer has (older than moves of metadata out of sql.js:
 * replaced by a copy made before them, a backup restored alone; or rebuilt by --recover from a file
 * whose pages of them were damaged): those messages are lost (their bodies may be in the file, but not
 * which message, turn or time they were). What remains is served: each conversation's count is brought
 * to the rows history.db has (so counts, pages and exports agree). Answers how many were lost, for the
 * caller's notice on /health.
 */
export async function reconcileColdRows(db: Database, history: HistoryStore, logger: Logger): Promise<{ messages: number; conversations: number }> {
  const expected = db.all<{ id: string; cold_seq: number; cold_count: number }>('SELECT id, cold_seq, cold_count FROM conversations WHERE cold_count > 0');
  if (expected.length === 0) return { messages: 0, conversations: 0 };
  const found = new Map(await history.countCold(expected.map((c) => [c.id, c.cold_seq])));
  const short = expected.filter((c) => (found.get(c.id) ?? 0) < c.cold_count);
  if (short.length === 0) return { messages: 0, conversations: 0 };
  const lost = short.reduce((n, c) => n + c.cold_count - (found.get(c.id) ?? 0), 0);
  await db.write((tx) => short.forEach((c) => tx.run('UPDATE conversations SET cold_count = ? WHERE id = ?', [found.get(c.id) ?? 0, c.id])));
  logger.error('history.cold_rows_lost', { conversations: short.length, messages: lost });
  return { messages: lost, conversations: short.length };
}

/**
 * Syncs history.db and notes its sync mark in service.db with the next write (no record of its own):
 * from then on history.db holds durably every body written before, and an open that finds its mark
 * behind the one noted knows it lost durable commits. Until noted, the mark noted before stands (it is
 * lower: the check is only less strict meanwhile).
 */
export async function syncHistory(db: Database, history: HistoryStore): Promise<void> {
  const mark = await history.sync();
  db.withNextWrite(NOTE_MARK_SQL, [HISTORY_MARK_KEY, String(mark)]);
}

/** The statement that notes the mark, riding the next write (often a first chat's message): the warm-up prepares it ahead (Service.practise). */
export const NOTE_MARK_SQL = 'INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)';

/** Notes in a transaction a sync mark history.db committed (with rows that transaction lets go of: cold moves). */
export function noteSyncMark(tx: WriteTx, mark: number): void {
  tx.run(NOTE_MARK_SQL, [HISTORY_MARK_KEY, String(mark)]);
}
