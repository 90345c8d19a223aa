import type { Database, WriteTx } from './database';
import { searchTerms, snippetOf, type SearchTerms } from './search-text';
import type { MessageRole, MessageRow, NewMessage, SearchHit, SearchOptions } from './types';

export interface RecentOptions {
  /** How many of the most recent messages (default 50). */
  limit?: number;
  /** Also `tool` messages (default: only user and assistant). */
  includeTools?: boolean;
}

interface RawMessage extends Omit<MessageRow, 'data'> {
  data: string | null;
}

const COLUMNS = 'seq, id, conversation_id, role, content, timestamp, tool_name, user_id, data, client_key';
const ROLES: ReadonlySet<string> = new Set<MessageRole>(['user', 'assistant', 'tool']);

function toRow(raw: RawMessage): MessageRow {
  let data: unknown = null;
  if (raw.data !== null) {
    try {
      data = JSON.parse(raw.data);
    } catch {
      data = raw.data;
    }
  }
  return { ...raw, data };
}

/** Inserts a message inside a caller's transaction (for store modules that write more in the same one). */
export function insertMessage(tx: WriteTx, m: NewMessage): void {
  if (!ROLES.has(m.role)) throw new Error(`invalid message role: ${String(m.role)}`);
  const data = m.data === undefined || m.data === null ? null : JSON.stringify(m.data);
  tx.run(
    'INSERT INTO messages (id, conversation_id, role, content, timestamp, tool_name, user_id, data, client_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [m.id, m.conversation_id, m.role, m.content, m.timestamp, m.tool_name ?? null, m.user_id ?? null, data, m.client_key ?? null],
  );
  // Activity only moves forward, even if messages are stored out of timestamp order.
  const bumped = tx.run('UPDATE conversations SET updated_at = max(updated_at, ?) WHERE id = ?', [m.timestamp, m.conversation_id]);
  if (bumped.changes === 0) throw new Error(`conversation ${m.conversation_id} not found`);
}

export class MessagesRepo {
  constructor(private readonly db: Database) {}

  /** Stores a message and bumps its conversation's `updated_at`, in one transaction. */
  async append(message: NewMessage): Promise<void> {
    await this.db.write((tx) => insertMessage(tx, message));
  }

  /** Stores several messages (e.g. a whole turn) in one transaction. */
  async appendMany(messages: readonly NewMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.db.write((tx) => {
      for (const m of messages) insertMessage(tx, m);
    });
  }

  get(id: string): MessageRow | undefined {
    const raw = this.db.get<RawMessage>(`SELECT ${COLUMNS} FROM messages WHERE id = ?`, [id]);
    return raw && toRow(raw);
  }

  /** The user message stored with this client key (a chat's sender and client_message_id). */
  byClientKey(clientKey: string): MessageRow | undefined {
    const raw = this.db.get<RawMessage>(`SELECT ${COLUMNS} FROM messages WHERE client_key = ?`, [clientKey]);
    return raw && toRow(raw);
  }

  /** The assistant reply to a user message: the next user or assistant message after it, if it is the assistant's. */
  replyTo(message: MessageRow): MessageRow | undefined {
    const raw = this.db.get<RawMessage>(
      `SELECT ${COLUMNS} FROM messages WHERE conversation_id = ? AND seq > ? AND role IN ('user', 'assistant') ORDER BY seq LIMIT 1`,
      [message.conversation_id, message.seq],
    );
    return raw?.role === 'assistant' ? toRow(raw) : undefined;
  }

  /** The most recent `limit` messages of a conversation, oldest first. */
  recent(conversationId: string, options: RecentOptions = {}): MessageRow[] {
    const limit = Math.floor(options.limit ?? 50);
    if (!(limit > 0)) return [];
    const roles = options.includeTools ? '' : " AND role IN ('user', 'assistant')";
    const rows = this.db.all<RawMessage>(
      `SELECT ${COLUMNS} FROM messages WHERE conversation_id = ?${roles} ORDER BY seq DESC LIMIT ?`,
      [conversationId, limit],
    );
    rows.reverse();
    return rows.map(toRow);
  }

  /** Every message of a conversation stored after `seq` (messages are append-only), oldest first. */
  after(conversationId: string, seq: number): MessageRow[] {
    return this.db
      .all<RawMessage>(`SELECT ${COLUMNS} FROM messages WHERE conversation_id = ? AND seq > ? ORDER BY seq`, [conversationId, seq])
      .map(toRow);
  }

  /** Messages in the database, or in one conversation. */
  count(conversationId?: string): number {
    const row =
      conversationId === undefined
        ? this.db.get<{ n: number }>('SELECT count(*) AS n FROM messages')
        : this.db.get<{ n: number }>('SELECT count(*) AS n FROM messages WHERE conversation_id = ?', [conversationId]);
    return row?.n ?? 0;
  }

  // ---- Search: a stand-in, replaced by the FTS5 index of history.db at merge (issue 13). ----
  // It scans with LIKE (each word somewhere in the content) and keeps the messages whose words match as
  // the index would: every word as a whole word, the last one as a prefix. Fine for small histories only.

  /** Messages matching every word of `query`, newest first; a query without a word is invalid_request. */
  async search(query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    const terms: SearchTerms = searchTerms(query);
    const limit = Math.max(1, Math.floor(options.limit ?? 20));
    const where = terms.words.map(() => "content LIKE ? ESCAPE '\\'");
    const params: string[] = terms.words.map((w) => `%${w.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    if (options.conversationId !== undefined) {
      where.push('conversation_id = ?');
      params.push(options.conversationId);
    }
    const hits: SearchHit[] = [];
    const rows = this.db.all<RawMessage>(`SELECT ${COLUMNS} FROM messages WHERE ${where.join(' AND ')} ORDER BY seq DESC`, params);
    for (const row of rows) {
      const snippet = snippetOf(row.content, terms);
      if (!snippet) continue;
      hits.push({ message_id: row.id, conversation_id: row.conversation_id, role: row.role, timestamp: row.timestamp, seq: row.seq, ...snippet });
      if (hits.length >= limit) break;
    }
    return hits;
  }
}
