import type { Database, WriteTx } from './database';

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
// A row is unpriced when its cost is null: then the group's cost is null too (never a partial sum shown as the whole).
const SUMS = `sum(input) AS input, sum(output) AS output, sum(cached) AS cached, CASE WHEN count(cost_micro) = count(*) THEN sum(cost_micro) END AS cost_micro, max(estimated) AS estimated, count(*) AS replies`;

interface RawRow extends Omit<UsageRow, 'estimated'> {
  estimated: number;
}
interface RawSum extends Omit<UsageSum, 'estimated'> {
  estimated: number;
}

const toRow = (raw: RawRow): UsageRow => ({ ...raw, estimated: raw.estimated === 1 });
const toSum = <T extends RawSum>(raw: T): Omit<T, 'estimated'> & { estimated: boolean } => ({ ...raw, estimated: raw.estimated === 1 });

export class UsageRepo {
  constructor(private readonly db: Database) {}

  /**
   * Stores a turn's usage under its message; a later turn stored under the same message (a webhook
   * message tried again) adds to it, keeping the latest context figures.
   */
  async record(usage: NewUsage): Promise<void> {
    await this.db.write((tx) => this.recordIn(tx, usage));
  }

  /** `record` inside a caller's transaction (a reply and its turn's usage: one durable commit). */
  recordIn(tx: WriteTx, usage: NewUsage): void {
    const u = usage;
    tx.run(
      `INSERT INTO usage (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (message_id) DO UPDATE SET updated_at = excluded.updated_at, day = excluded.day, provider = excluded.provider, model = excluded.model,
         input = input + excluded.input, output = output + excluded.output, cached = cached + excluded.cached,
         cost_micro = cost_micro + excluded.cost_micro, estimated = max(estimated, excluded.estimated), calls = calls + excluded.calls,
         context_used = excluded.context_used, context_window = excluded.context_window`,
      [u.message_id, u.conversation_id, u.source, u.day, u.updated_at, u.provider, u.model, u.input, u.output, u.cached, u.cost_micro, u.estimated ? 1 : 0, u.calls, u.context_used, u.context_window],
    );
  }

  /** The rows of these messages, by message id. */
  ofMessages(messageIds: readonly string[]): Map<string, UsageRow> {
    const found = new Map<string, UsageRow>();
    // Chunked: SQLite limits the number of parameters of one statement.
    for (let i = 0; i < messageIds.length; i += 200) {
      const ids = messageIds.slice(i, i + 200);
      const rows = this.db.all<RawRow>(`SELECT ${COLUMNS} FROM usage WHERE message_id IN (${ids.map(() => '?').join(', ')})`, ids);
      for (const raw of rows) found.set(raw.message_id, toRow(raw));
    }
    return found;
  }

  /** A conversation's sums and its latest row (whose context figures are the conversation's now); undefined without usage. */
  ofConversation(conversationId: string): { sum: UsageSum; last: UsageRow } | undefined {
    const raw = this.db.get<RawSum>(`SELECT ${SUMS} FROM usage WHERE conversation_id = ?`, [conversationId]);
    if (!raw || raw.replies === 0) return undefined;
    const last = this.db.get<RawRow>(`SELECT ${COLUMNS} FROM usage WHERE conversation_id = ? ORDER BY updated_at DESC, rowid DESC LIMIT 1`, [conversationId]);
    return last && { sum: toSum(raw), last: toRow(last) };
  }

  /** Sums per day and model for days from `fromDay` (inclusive), optionally of one source only, newest day first. */
  byDayAndModel(fromDay: string, source?: string): ModelUsageSum[] {
    const filter = source === undefined ? '' : ' AND source = ?';
    return this.db
      .all<RawSum & { day: string; provider: string; model: string }>(
        `SELECT day, provider, model, ${SUMS} FROM usage WHERE day >= ?${filter} GROUP BY day, provider, model ORDER BY day DESC, provider, model`,
        source === undefined ? [fromDay] : [fromDay, source],
      )
      .map(toSum);
  }

  /** A source's spending on one day: tokens (input + output) and the cost of its priced rows, in millionths of a dollar. */
  spent(source: string, day: string): { tokens: number; cost_micro: number } {
    const raw = this.db.get<{ tokens: number | null; cost_micro: number | null }>('SELECT sum(input + output) AS tokens, sum(cost_micro) AS cost_micro FROM usage WHERE source = ? AND day = ?', [
      source,
      day,
    ]);
    return { tokens: raw?.tokens ?? 0, cost_micro: raw?.cost_micro ?? 0 };
  }
}
