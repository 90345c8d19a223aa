// The metadata of messages whose conversation went idle ("cold"), moved out of sql.js into history.db
// beside their bodies (issue 25: sql.js keeps its whole database in memory, and about 130 bytes a
// message made an open of a 10 GB history hold 356 MB). Worker side: synchronous, on history.db's
// connection. The main thread's side is MessagesRepo (reads) and HistoryMaintenance (moves, deletes).
import type { Database as SqliteFile } from 'node-sqlite3-wasm';
import type { ColdCutResult, ColdMeta, ColdQuery, ColdRow, ColdUsage } from './protocol';

export const COLD_SCHEMA = `
CREATE TABLE IF NOT EXISTS cold_messages (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, conversation_id TEXT NOT NULL, role TEXT NOT NULL, timestamp TEXT NOT NULL, tool_name TEXT, user_id TEXT, client_key TEXT, body_key INTEGER NOT NULL, bytes INTEGER NOT NULL, cut INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS cold_messages_conversation ON cold_messages (conversation_id, seq);
CREATE INDEX IF NOT EXISTS cold_messages_id ON cold_messages (id);
CREATE INDEX IF NOT EXISTS cold_messages_client_key ON cold_messages (client_key) WHERE client_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS cold_messages_body_key ON cold_messages (body_key);
CREATE INDEX IF NOT EXISTS cold_messages_tool_uncut ON cold_messages (timestamp) WHERE role = 'tool' AND cut = 0;
CREATE TABLE IF NOT EXISTS cold_usage (message_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, usage TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS cold_usage_conversation ON cold_usage (conversation_id);`;

// Without their bodies: the caller asks for those as for any message (HistoryStore.get, which reads a
// damaged file key by key), so one unreadable body never fails a whole conversation.
const SELECT = 'SELECT seq, id, conversation_id, role, timestamp, tool_name, user_id, client_key, body_key, bytes, cut FROM cold_messages';

type SqlRow = Record<string, unknown>;

function nullable(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

/**
 * A client key holds NUL separators (messages.ts clientKeyOf), which the WASM binding's text parameters
 * end at: stored as its JSON text (control characters escaped) instead.
 */
function keyText(key: string): string {
  return JSON.stringify(key);
}

function metaOf(r: SqlRow): ColdMeta {
  return {
    seq: Number(r.seq),
    id: String(r.id),
    conversation_id: String(r.conversation_id),
    role: String(r.role) as ColdMeta['role'],
    timestamp: String(r.timestamp),
    tool_name: nullable(r.tool_name),
    user_id: nullable(r.user_id),
    client_key: r.client_key === null || r.client_key === undefined ? null : (JSON.parse(String(r.client_key)) as string),
    body_key: Number(r.body_key),
    bytes: Number(r.bytes),
    cut: Number(r.cut),
  };
}

/** Stores moved rows; a row moved again (a crash before sql.js let go of it) replaces its copy. */
export function putCold(db: SqliteFile, rows: readonly ColdMeta[]): number {
  for (const r of rows) {
    db.run('INSERT OR REPLACE INTO cold_messages (seq, id, conversation_id, role, timestamp, tool_name, user_id, client_key, body_key, bytes, cut) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [
      r.seq,
      r.id,
      r.conversation_id,
      r.role,
      r.timestamp,
      r.tool_name,
      r.user_id,
      r.client_key === null ? null : keyText(r.client_key),
      r.body_key,
      r.bytes,
      r.cut,
    ]);
  }
  return rows.length;
}

/**
 * Cold rows, oldest first. Only rows at or below the conversation's `maxSeq` (its
 * `cold_seq` in sql.js) count: a copy above it is a move sql.js has not taken over yet.
 */
export function queryCold(db: SqliteFile, q: ColdQuery): ColdRow[] {
  switch (q.kind) {
    case 'recent': {
      const roles = q.includeTools ? '' : " AND role <> 'tool'";
      const rows = db.all(`${SELECT} WHERE conversation_id = ? AND seq <= ?${roles} ORDER BY seq DESC LIMIT ?`, [q.conversationId, q.maxSeq, q.limit]);
      return rows.reverse().map(metaOf);
    }
    case 'after':
      return db.all(`${SELECT} WHERE conversation_id = ? AND seq > ? AND seq <= ? ORDER BY seq`, [q.conversationId, q.seq, q.maxSeq]).map(metaOf);
    case 'id':
      return db.all(`${SELECT} WHERE id = ?`, [q.id]).map(metaOf);
    case 'client_key':
      return db.all(`${SELECT} WHERE client_key = ?`, [keyText(q.clientKey)]).map(metaOf);
    case 'turn': {
      // As turn-reply.ts over the cold rows: the last row before the next user message; `ended` when
      // that user message is cold too (else the turn may go on in sql.js).
      const next = db.get("SELECT min(seq) AS s FROM cold_messages WHERE conversation_id = ? AND seq > ? AND seq <= ? AND role = 'user'", [q.conversationId, q.seq, q.maxSeq]);
      const end = next?.s === null || next?.s === undefined ? null : Number(next.s);
      const last = db.all(`${SELECT} WHERE conversation_id = ? AND seq > ? AND seq <= ? AND seq < ? ORDER BY seq DESC LIMIT 1`, [q.conversationId, q.seq, q.maxSeq, end ?? Number.MAX_SAFE_INTEGER]);
      return last.map((r) => ({ ...metaOf(r), ended: end !== null }));
    }
    case 'user_before':
      return db.all(`${SELECT} WHERE conversation_id = ? AND seq < ? AND seq <= ? AND role = 'user' ORDER BY seq DESC LIMIT 1`, [q.conversationId, q.seq, q.maxSeq]).map(metaOf);
    case 'body_keys': {
      const out: ColdRow[] = [];
      for (let i = 0; i < q.keys.length; i += 500) {
        const part = q.keys.slice(i, i + 500);
        const rows = db.all(`${SELECT} WHERE body_key IN (${part.map(() => '?').join(', ')})`, part);
        out.push(...rows.map(metaOf));
      }
      return out;
    }
  }
}

/** How many cold rows each conversation has at or below its `cold_seq` (given as [id, cold_seq] pairs). */
export function countCold(db: SqliteFile, conversations: ReadonlyArray<[string, number]>): Array<[string, number]> {
  return conversations.map(([id, maxSeq]) => [id, Number(db.get('SELECT count(*) AS n FROM cold_messages WHERE conversation_id = ? AND seq <= ?', [id, maxSeq])?.n ?? 0)]);
}

/** Up to `limit` cold rows of any conversation after `seq`, in order (a rebuild by `serve --recover`: history-db.ts). */
export function queryColdAfterSeq(db: SqliteFile, seq: number, limit: number): ColdMeta[] {
  return db.all(`${SELECT} WHERE seq > ? ORDER BY seq LIMIT ?`, [seq, limit]).map(metaOf);
}

/**
 * Usage rows moved with their conversation (store/usage.ts), as their JSON; a row moved again (a crash
 * before sql.js let go of it) replaces its copy.
 */
export function putColdUsage(db: SqliteFile, rows: readonly ColdUsage[]): void {
  for (const r of rows) db.run('INSERT OR REPLACE INTO cold_usage (message_id, conversation_id, usage) VALUES (?, ?, ?)', [r.message_id, r.conversation_id, JSON.stringify(r)]);
}

/** The moved usage rows of these messages. */
export function queryColdUsage(db: SqliteFile, messageIds: readonly string[]): ColdUsage[] {
  const out: ColdUsage[] = [];
  for (let i = 0; i < messageIds.length; i += 500) {
    const part = messageIds.slice(i, i + 500);
    for (const r of db.all(`SELECT usage FROM cold_usage WHERE message_id IN (${part.map(() => '?').join(', ')})`, part)) out.push(JSON.parse(String(r.usage)) as ColdUsage);
  }
  return out;
}

/** Deletes up to `limit` cold rows of a deleted conversation, with their bodies; how many. */
export function dropCold(db: SqliteFile, conversationId: string, limit: number): number {
  const rows = db.all('SELECT seq, body_key FROM cold_messages WHERE conversation_id = ? ORDER BY seq LIMIT ?', [conversationId, limit]);
  for (const r of rows) {
    db.run('DELETE FROM bodies WHERE key = ?', [Number(r.body_key)]);
    db.run('DELETE FROM cold_messages WHERE seq = ?', [Number(r.seq)]);
  }
  // Its per-message usage goes with the last rows (its spending stays counted in sql.js' sums per day).
  if (rows.length < limit) db.run('DELETE FROM cold_usage WHERE conversation_id = ?', [conversationId]);
  return rows.length;
}

/**
 * history.tool_output_days over cold rows: up to `limit` tool outputs older than `cutoff` are marked
 * done, those of `minBytes` or more cut (history-db.ts `cut`); what each conversation's bytes lost. Every
 * cold row's body is here (maintenance.ts `moveCold` moves no row whose body is still held in memory).
 */
export function cutCold(db: SqliteFile, cutoff: string, keepChars: number, note: string, minBytes: number, limit: number): ColdCutResult {
  const rows = db.all("SELECT seq, conversation_id, body_key, bytes FROM cold_messages WHERE role = 'tool' AND cut = 0 AND timestamp < ? ORDER BY timestamp LIMIT ?", [cutoff, limit]);
  const deltas = new Map<string, number>();
  for (const r of rows) {
    let bytes = Number(r.bytes);
    if (bytes >= minBytes) {
      db.run('UPDATE bodies SET content = substr(content, 1, ?) || ?, cut = 1 WHERE cut = 0 AND key = ?', [keepChars, note, Number(r.body_key)]);
      const now = db.get('SELECT length(CAST(content AS BLOB)) + coalesce(length(CAST(data AS BLOB)), 0) AS bytes FROM bodies WHERE key = ?', [Number(r.body_key)]);
      if (now) bytes = Number(now.bytes);
    }
    db.run('UPDATE cold_messages SET cut = 1, bytes = ? WHERE seq = ?', [bytes, Number(r.seq)]);
    const conversation = String(r.conversation_id);
    if (bytes !== Number(r.bytes)) deltas.set(conversation, (deltas.get(conversation) ?? 0) + Number(r.bytes) - bytes);
  }
  return { rows: rows.length, deltas: [...deltas] };
}
