import type { Database, PlannedOp, WriteTx } from './database';
import type { HistoryStore } from './history/history-store';

/**
 * Token usage and cost, one row per reply (keyed by its message id; a turn that ended without a reply
 * is kept under the message that started it, since its tokens were spent all the same). Rows stay when
 * their conversation is deleted: the day's totals and the webhook budgets count what was spent.
 */
export interface NewUsage {
  message_id: string;
  conversation_id: string;
  /** The conversation's source (`webhook:<account>`...), kept so budgets outlive a deleted conversation. */
  source: string;
  /** UTC day `YYYY-MM-DD`. */
  day: string;
  updated_at: string;
  provider: string;
  model: string;
  input: number;
  output: number;
  cached: number;
  /** Millionths of a US dollar; null when a price was unknown. */
  cost_micro: number | null;
  estimated: boolean;
  calls: number;
  context_used: number | null;
  context_window: number | null;
}

export type UsageRow = NewUsage;

/** A conversation's context fullness: its latest reply's figures. */
export type UsageContext = Pick<UsageRow, 'context_used' | 'context_window'>;

/** Sums over a group of rows. `cost_micro` is null when any row of the group had no price. */
export interface UsageSum {
  input: number;
  output: number;
  cached: number;
  cost_micro: number | null;
  estimated: boolean;
  replies: number;
}

export interface ModelUsageSum extends UsageSum {
  day: string;
  provider: string;
  model: string;
}

export const USAGE_TABLE_SQL = `CREATE TABLE usage (message_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, source TEXT NOT NULL, day TEXT NOT NULL, updated_at TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL, cached INTEGER NOT NULL, cost_micro REAL, estimated INTEGER NOT NULL, calls INTEGER NOT NULL, context_used INTEGER, context_window INTEGER);
  CREATE INDEX usage_conversation ON usage (conversation_id, updated_at);
  CREATE INDEX usage_day ON usage (day, source)`;

const COLUMNS = 'message_id, conversation_id, source, day, updated_at, provider, model, input, output, cached, cost_micro, estimated, calls, context_used, context_window';
/**
 * Deletes a row only as it was read (parameters: message_id, calls, updated_at): one a later `record`
 * added to meanwhile stays, for the next pass. Every such add raises `calls` (a row is stored only for
 * a turn with a provider call: TurnUsage) and sets `updated_at`, so the two tell it; comparing every
 * column would put 15 values a row in the move's journal record instead of 3.
 */
const DELETE_UNCHANGED = 'DELETE FROM usage WHERE message_id = ? AND calls = ? AND updated_at = ?';
// A row is unpriced when its cost is null: then the group's cost is null too (never a partial sum shown as the whole).
// Summed over PARTS: each reply's row in sql.js, and the sums of rows moved to history.db (moveCold).
const SUMS = `sum(input) AS input, sum(output) AS output, sum(cached) AS cached, CASE WHEN sum(unpriced) = 0 THEN sum(cost_micro) END AS cost_micro, max(estimated) AS estimated, sum(replies) AS replies`;
const ROW_PART = 'input, output, cached, coalesce(cost_micro, 0) AS cost_micro, cost_micro IS NULL AS unpriced, estimated, 1 AS replies';
const SUM_PART = 'input, output, cached, cost_micro, unpriced, estimated, replies';
/** Usage rows moved per step (one history.db commit, one sql.js transaction). */
const MOVE_BATCH = 2000;

interface RawRow extends Omit<UsageRow, 'estimated'> {
  estimated: number;
}
interface RawSum extends Omit<UsageSum, 'estimated'> {
  estimated: number;
}

const toRow = (raw: RawRow): UsageRow => ({ ...raw, estimated: raw.estimated === 1 });
const toSum = <T extends RawSum>(raw: T): Omit<T, 'estimated'> & { estimated: boolean } => ({ ...raw, estimated: raw.estimated === 1 });

/** What UsageRepo needs of history.db (store/history/history-store.ts). */
export type ColdUsageStore = Pick<HistoryStore, 'putColdUsage' | 'coldUsage'>;

/** Sums of moved rows, as usage_days and usage_conversations hold them. */
interface Sums {
  input: number;
  output: number;
  cached: number;
  cost_micro: number;
  unpriced: number;
  estimated: number;
  replies: number;
}

function sumsOf(rows: readonly RawRow[]): Sums {
  const s: Sums = { input: 0, output: 0, cached: 0, cost_micro: 0, unpriced: 0, estimated: 0, replies: 0 };
  for (const r of rows) {
    s.input += r.input;
    s.output += r.output;
    s.cached += r.cached;
    s.cost_micro += r.cost_micro ?? 0;
    s.unpriced += r.cost_micro === null ? 1 : 0;
    s.estimated = Math.max(s.estimated, r.estimated);
    s.replies += 1;
  }
  return s;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

const ADD_SUMS = `input = input + excluded.input, output = output + excluded.output, cached = cached + excluded.cached, cost_micro = cost_micro + excluded.cost_micro,
  unpriced = unpriced + excluded.unpriced, estimated = max(estimated, excluded.estimated), replies = replies + excluded.replies`;

/**
 * A conversation's sums of moved rows and its latest moved row's context figures (migration 22): columns
 * of its `conversations` row, NULL until some of its rows moved, deleted with it. They were a row of
 * `usage_conversations` keeping the latest usage row whole as JSON (about 0.4 KB a conversation with its
 * key and index: what sql.js held most per conversation); `last_at` (the latest moved row's updated_at)
 * tells whether a row still in sql.js is newer.
 */
export const CONVERSATION_USAGE_COLUMNS: readonly (readonly [name: string, type: 'INTEGER' | 'REAL' | 'TEXT'])[] = [
  ['usage_input', 'INTEGER'],
  ['usage_output', 'INTEGER'],
  ['usage_cached', 'INTEGER'],
  ['usage_cost_micro', 'REAL'],
  ['usage_unpriced', 'INTEGER'],
  ['usage_estimated', 'INTEGER'],
  ['usage_replies', 'INTEGER'],
  ['usage_last_at', 'TEXT'],
  ['usage_context_used', 'INTEGER'],
  ['usage_context_window', 'INTEGER'],
];
/** The moved sums of a conversation as a part of SUMS (ROW_PART's names). */
const CONVERSATION_PART =
  'usage_input AS input, usage_output AS output, usage_cached AS cached, usage_cost_micro AS cost_micro, usage_unpriced AS unpriced, usage_estimated AS estimated, usage_replies AS replies';
/** Adds moved rows' sums to their conversation's (parameters: the seven sums of SUM_PART, the id). */
const ADD_CONVERSATION_SUMS = `UPDATE conversations SET usage_input = coalesce(usage_input, 0) + ?, usage_output = coalesce(usage_output, 0) + ?,
  usage_cached = coalesce(usage_cached, 0) + ?, usage_cost_micro = coalesce(usage_cost_micro, 0) + ?, usage_unpriced = coalesce(usage_unpriced, 0) + ?,
  usage_estimated = max(coalesce(usage_estimated, 0), ?), usage_replies = coalesce(usage_replies, 0) + ? WHERE id = ?`;
/** Keeps a moved row's context figures unless a later one moved before (parameters: updated_at, context_used, context_window, id, updated_at). */
const SET_CONVERSATION_LAST = `UPDATE conversations SET usage_last_at = ?, usage_context_used = ?, usage_context_window = ?
  WHERE id = ? AND (usage_last_at IS NULL OR usage_last_at <= ?)`;

/**
 * The statement `UsageRepo.record` runs, known before it runs: a reply's planned write carries it
 * (MessagesRepo.appendMany, Database.writePlanned).
 */
export function usageOp(u: NewUsage): PlannedOp {
  return {
    sql: `INSERT INTO usage (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (message_id) DO UPDATE SET updated_at = excluded.updated_at, day = excluded.day, provider = excluded.provider, model = excluded.model,
         input = input + excluded.input, output = output + excluded.output, cached = cached + excluded.cached,
         cost_micro = cost_micro + excluded.cost_micro, estimated = max(estimated, excluded.estimated), calls = calls + excluded.calls,
         context_used = excluded.context_used, context_window = excluded.context_window`,
    params: [
      u.message_id,
      u.conversation_id,
      u.source,
      u.day,
      u.updated_at,
      u.provider,
      u.model,
      u.input,
      u.output,
      u.cached,
      u.cost_micro,
      u.estimated ? 1 : 0,
      u.calls,
      u.context_used,
      u.context_window,
    ],
  };
}

export class UsageRepo {
  /** Whether the schema has the sums of moved rows per day (migration 19) and per conversation (migration 22), asked once. */
  private moved: boolean | undefined;

  constructor(
    private readonly db: Database,
    private readonly history?: ColdUsageStore,
  ) {}

  /**
   * Stores a turn's usage under its message; a later turn stored under the same message (a webhook
   * message tried again) adds to it, keeping the latest context figures.
   */
  async record(usage: NewUsage): Promise<void> {
    await this.db.write((tx) => this.recordIn(tx, usage));
  }

  /** `record` inside a caller's transaction (a reply and its turn's usage: one durable commit). */
  recordIn(tx: WriteTx, usage: NewUsage): void {
    const { sql, params } = usageOp(usage);
    tx.run(sql, params);
  }

  /**
   * The rows of these messages, by message id. Those moved with their conversation are read from
   * history.db, only for a conversation whose rows moved (`conversationId`, when all are of one:
   * otherwise a page of a hot conversation would ask history.db for its user messages every time).
   */
  async ofMessages(messageIds: readonly string[], conversationId?: string): Promise<Map<string, UsageRow>> {
    const found = new Map<string, UsageRow>();
    // Chunked: SQLite limits the number of parameters of one statement.
    for (let i = 0; i < messageIds.length; i += 200) {
      const ids = messageIds.slice(i, i + 200);
      const rows = this.db.all<RawRow>(`SELECT ${COLUMNS} FROM usage WHERE message_id IN (${ids.map(() => '?').join(', ')})`, ids);
      for (const raw of rows) found.set(raw.message_id, toRow(raw));
    }
    const missing = messageIds.filter((id) => !found.has(id));
    if (missing.length > 0 && this.history && this.hasMoved() && (conversationId === undefined || this.movedOf(conversationId))) {
      for (const row of await this.history.coldUsage(missing)) found.set(row.message_id, row as unknown as UsageRow);
    }
    return found;
  }

  /** A conversation's sums and its latest row's context figures (the conversation's now); undefined without usage. */
  ofConversation(conversationId: string): { sum: UsageSum; last: UsageContext } | undefined {
    const moved = this.hasMoved();
    const rows = `SELECT ${ROW_PART} FROM usage WHERE conversation_id = ?`;
    const raw = this.db.get<RawSum>(
      `SELECT ${SUMS} FROM (${moved ? `${rows} UNION ALL SELECT ${CONVERSATION_PART} FROM conversations WHERE id = ? AND usage_replies IS NOT NULL` : rows})`,
      moved ? [conversationId, conversationId] : [conversationId],
    );
    if (!raw || !raw.replies) return undefined;
    const hot = this.db.get<UsageContext & { updated_at: string }>(
      'SELECT updated_at, context_used, context_window FROM usage WHERE conversation_id = ? ORDER BY updated_at DESC, rowid DESC LIMIT 1',
      [conversationId],
    );
    const cold = moved
      ? this.db.get<UsageContext & { updated_at: string | null }>(
          'SELECT usage_last_at AS updated_at, usage_context_used AS context_used, usage_context_window AS context_window FROM conversations WHERE id = ? AND usage_replies IS NOT NULL',
          [conversationId],
        )
      : undefined;
    // A row still in sql.js is the latest unless a later one moved (an unreadable moved one, migration 22, never is).
    const last = hot && (!cold || cold.updated_at === null || hot.updated_at >= cold.updated_at) ? hot : cold;
    return last && { sum: toSum(raw), last: { context_used: last.context_used, context_window: last.context_window } };
  }

  /** Sums per day and model for days from `fromDay` (inclusive), optionally of one source only, newest day first. */
  byDayAndModel(fromDay: string, source?: string): ModelUsageSum[] {
    const filter = source === undefined ? 'day >= ?' : 'day >= ? AND source = ?';
    const params = source === undefined ? [fromDay] : [fromDay, source];
    return this.db
      .all<RawSum & { day: string; provider: string; model: string }>(
        `SELECT day, provider, model, ${SUMS} FROM (${this.parts(filter, 'day, provider, model, ')}) GROUP BY day, provider, model ORDER BY day DESC, provider, model`,
        this.hasMoved() ? [...params, ...params] : params,
      )
      .map(toSum);
  }

  /** A source's spending on one day: tokens (input + output) and the cost of its priced rows, in millionths of a dollar. */
  spent(source: string, day: string): { tokens: number; cost_micro: number } {
    const raw = this.db.get<{ tokens: number | null; cost_micro: number | null }>(
      `SELECT sum(input + output) AS tokens, sum(cost_micro) AS cost_micro FROM (${this.parts('source = ? AND day = ?')})`,
      this.hasMoved() ? [source, day, source, day] : [source, day],
    );
    return { tokens: raw?.tokens ?? 0, cost_micro: raw?.cost_micro ?? 0 };
  }

  /**
   * Moves the usage rows of conversations whose metadata went cold (or that were deleted) out of sql.js,
   * where they grew with the history (issue 25): up to MOVE_BATCH rows (of any such conversations) a step. Their
   * figures go to history.db first (committed with an fsync and a sync mark), then one sql.js
   * transaction adds them to the sums per day and per conversation, deletes them and notes the mark. A
   * crash between leaves them in both, counted once (the sums change with the delete); the next pass
   * moves them again (history.db replaces its copy). So does a row written to meanwhile: only rows still
   * as read are deleted and summed. A deleted conversation's rows only join the day's
   * sums (budgets and get_usage count what was spent). Returns how many moved (0: none left).
   */
  async moveCold(noteMark: (tx: WriteTx, mark: number) => void): Promise<number> {
    if (!this.history || !this.hasMoved()) return 0;
    const rows = this.db.all<RawRow & { kept: number }>(
      `SELECT ${COLUMNS.split(', ')
        .map((c) => `u.${c}`)
        .join(', ')}, c.id IS NOT NULL AS kept FROM usage u LEFT JOIN conversations c ON c.id = u.conversation_id
       WHERE c.id IS NULL OR (c.hot = 0 AND c.cold_count > 0) LIMIT ?`,
      [MOVE_BATCH],
    );
    if (rows.length === 0) return 0;
    const kept = rows.filter((r) => r.kept === 1).map(({ kept: _kept, ...r }) => r);
    const mark = kept.length > 0 ? await this.history.putColdUsage(kept.map((r) => ({ ...toRow(r) }))) : 0;
    await this.db.write((tx) => {
      // A row a `record` added to since the select (a webhook message's turn tried again) is not the one
      // history.db just got: it stays, counted here, and the next pass moves it whole.
      const present = rows.filter((r) => tx.run(DELETE_UNCHANGED, [r.message_id, r.calls, r.updated_at]).changes > 0);
      for (const [key, group] of groupBy(present, (r) => JSON.stringify([r.day, r.source, r.provider, r.model]))) {
        const s = sumsOf(group);
        tx.run(
          `INSERT INTO usage_days (day, source, provider, model, input, output, cached, cost_micro, unpriced, estimated, replies) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (day, source, provider, model) DO UPDATE SET ${ADD_SUMS}`,
          [...(JSON.parse(key) as string[]), s.input, s.output, s.cached, s.cost_micro, s.unpriced, s.estimated, s.replies],
        );
      }
      // A conversation deleted since the select has no row to add to: its rows join the day's sums only, as a deleted one's.
      for (const [conversationId, group] of groupBy(
        present.filter((r) => r.kept === 1),
        (r) => r.conversation_id,
      )) {
        const s = sumsOf(group);
        const latest = group.reduce((a, b) => (b.updated_at > a.updated_at ? b : a));
        tx.run(ADD_CONVERSATION_SUMS, [s.input, s.output, s.cached, s.cost_micro, s.unpriced, s.estimated, s.replies, conversationId]);
        tx.run(SET_CONVERSATION_LAST, [latest.updated_at, latest.context_used, latest.context_window, conversationId, latest.updated_at]);
      }
      if (mark > 0) noteMark(tx, mark);
    });
    return rows.length;
  }

  /** The rows in sql.js matching `where`, and the moved rows' sums per day (usage_days) matching it too. */
  private parts(where: string, extra = ''): string {
    const rows = `SELECT ${extra}${ROW_PART} FROM usage WHERE ${where}`;
    return this.hasMoved() ? `${rows} UNION ALL SELECT ${extra}${SUM_PART} FROM usage_days WHERE ${where}` : rows;
  }

  /** Whether some of this conversation's rows moved to history.db. */
  private movedOf(conversationId: string): boolean {
    return this.db.get('SELECT 1 AS present FROM conversations WHERE id = ? AND usage_replies IS NOT NULL', [conversationId]) !== undefined;
  }

  /** False on a schema before migration 22 (only a test opens one and keeps it: a store always migrates), whose rows stay in sql.js. */
  private hasMoved(): boolean {
    this.moved ??= this.db.get("SELECT 1 AS present FROM pragma_table_info('conversations') WHERE name = 'usage_replies'") !== undefined;
    return this.moved;
  }
}
