import { wellFormed } from '../protocol/code-points';
import { previewOf } from '../protocol/preview';
import { runPlanned } from './database';
import { packedMap } from '../platform/packed-map';
import type { Database, PlannedOp, WriteOptions, WriteTx } from './database';
import type { WriteWatch } from './read-memo';
import type { HistoryStore } from './history/history-store';
import type { BodyIn, BodyOut, ColdRow, KeyedBody } from './history/protocol';
import { hasColdHistory } from './history/restore';
import { parseSnippet, toMatchExpression } from './history/search-query';
import { turnReplySql } from './turn-reply';
import type { MessageMatch, MessageRole, MessageRow, NewMessage } from './types';

export interface RecentOptions {
  /** How many of the most recent messages (default 50). */
  limit?: number;
  /** Also `tool` messages (default: only user, assistant and summary). */
  includeTools?: boolean;
}

/**
 * A message's row in sql.js: its metadata, and its body inline only until the body is moved to
 * history.db (`body_key` set, `content` '' and `data` NULL there).
 */
interface RawMessage extends Omit<MessageRow, 'data'> {
  data: string | null;
  body_key: number | null;
}

/**
 * How a chat's client_message_id is stored with its user message (`client_key`): with its sender's
 * person (protocol/sources.ts personOf), so only that person's resend finds it.
 */
export function clientKeyOf(person: string, clientMessageId: string): string {
  return `${person}\u0000${clientMessageId}`;
}

/** Whether a stored client key (clientKeyOf) is `person`'s: false without one (a message sent without client_message_id). */
export function keyIsPersons(clientKey: string | null | undefined, person: string): boolean {
  return clientKey?.startsWith(clientKeyOf(person, '')) === true;
}

/**
 * The client_message_id a stored key holds, without its sender (clients see the id only). After the last
 * separator: a key left from before people (migration 12: source, credential kind, id) gives its id too.
 */
export function clientMessageIdOf(clientKey: string): string {
  return clientKey.slice(clientKey.lastIndexOf('\u0000') + 1);
}

/**
 * What a message whose body history.db lost (a damaged file, `serve --recover`) reads as, so its
 * conversation stays readable, exportable and usable by the model; /health says degraded meanwhile.
 */
export const LOST_BODY_TEXT = '[this message was lost in a damaged history file]';

const COLUMNS = 'seq, id, conversation_id, role, content, timestamp, tool_name, user_id, data, client_key, body_key';
const ROLES: ReadonlySet<string> = new Set<MessageRole>(['user', 'assistant', 'tool', 'summary']);
/** Search results asked of history.db beyond `limit`, for hits whose message is gone meanwhile. */
const SEARCH_SLACK = 10;
const MAX_SEARCH_LIMIT = 200;

/**
 * A message's row as every reader is given it, built by this one literal (a read's `withBodies`, the
 * history cache's rows of what the agent stored): one hidden class whichever path made the row, so the
 * code that walks a conversation's rows (the request's view, the transcript, the turn's context) sees one
 * map, not a read's spread and a cached literal in turn (V8 deoptimized those functions at each change).
 */
export function messageRow(meta: Omit<MessageRow, 'content' | 'data'>, content: string, data: unknown): MessageRow {
  return {
    seq: meta.seq,
    id: meta.id,
    conversation_id: meta.conversation_id,
    role: meta.role,
    content,
    timestamp: meta.timestamp,
    tool_name: meta.tool_name,
    user_id: meta.user_id,
    data,
    client_key: meta.client_key,
  };
}

function parseData(data: string | null): unknown {
  if (data === null) return null;
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

function dataText(m: NewMessage): string | null {
  return m.data === undefined || m.data === null ? null : JSON.stringify(m.data);
}

/**
 * A message as the store takes it, checked where every message enters (its body's write, its row's
 * statements): a known role, and its text well-formed, made so in place (a lone surrogate becomes U+FFFD,
 * protocol/code-points.ts wellFormed), so what the caller goes on to show (the events, the history cache
 * the model is sent, a reply's answer) is what the store gives back, before and after a restart; its
 * tool name too (a tool call the model named: an unknown tool's result carries it) and its user_id (a
 * webhook sender's, as the sender's client gave it). `data` needs
 * nothing: stored as JSON, whose text escapes a lone surrogate, it reads back as it was given.
 */
function checkMessage(m: NewMessage): void {
  if (!ROLES.has(m.role)) throw new Error(`invalid message role: ${String(m.role)}`);
  m.content = wellFormed(m.content);
  if (typeof m.tool_name === 'string') m.tool_name = wellFormed(m.tool_name);
  if (typeof m.user_id === 'string') m.user_id = wellFormed(m.user_id);
}

export function bodyOf(m: Pick<NewMessage, 'conversation_id' | 'role' | 'content'>, data: string | null): BodyIn {
  return { conversation_id: m.conversation_id, role: m.role, content: m.content, data };
}

export function byteSize(content: string, data: string | null): number {
  return Buffer.byteLength(content) + (data === null ? 0 : Buffer.byteLength(data));
}

/**
 * A message's INSERT: its seq given (MessagesRepo.nextSeq), so that it is known before the statement runs
 * (Database.writePlanned applies it behind its record) and replay makes the same row. Records of builds
 * before s20 hold it without `seq` (AUTOINCREMENT chose it; s19's with `RETURNING seq`): replayed in
 * order, they make the same rows as they did.
 */
const INSERT_SQL = 'INSERT INTO messages (seq, id, conversation_id, role, content, timestamp, tool_name, user_id, data, client_key, body_key, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/** The seq AUTOINCREMENT gives the next row: above every seq the table ever held. */
const NEXT_SEQ_SQL = "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0), coalesce((SELECT max(seq) FROM messages), 0)) + 1 AS n";

/** A write statement other than a message's INSERT that may change the next seq (or whose effect on it is not known). */
function movesSeq(sql: string): boolean {
  return sql !== INSERT_SQL && /\b(?:messages|sqlite_sequence)\b/i.test(sql);
}

/** The statements that store a message as row `seq` (MessagesRepo.insertIn), known before they run (Database.writePlanned). */
function messageOps(m: NewMessage, seq: number, bodyKey?: number): PlannedOp[] {
  checkMessage(m);
  const data = dataText(m);
  const bytes = byteSize(m.content, data);
  const inline = bodyKey === undefined;
  // Activity only moves forward, even if messages are stored out of timestamp order. The preview is
  // kept on the row so listing conversations never reads a body.
  const preview = m.role === 'tool' || m.role === 'summary' ? null : previewOf(m.content);
  return [
    {
      sql: INSERT_SQL,
      params: [seq, m.id, m.conversation_id, m.role, inline ? m.content : '', m.timestamp, m.tool_name ?? null, m.user_id ?? null, inline ? data : null, m.client_key ?? null, bodyKey ?? null, bytes],
    },
    {
      sql: 'UPDATE conversations SET updated_at = max(updated_at, ?), bytes = bytes + ?, last_message = coalesce(?, last_message), hot = 1 WHERE id = ?',
      params: [m.timestamp, bytes, preview, m.conversation_id],
      check: (changes) => {
        if (changes === 0) throw notFound(m.conversation_id);
      },
    },
  ];
}

function notFound(conversationId: string): Error {
  return new Error(`conversation ${conversationId} not found`);
}

/** A cold row (history/cold.ts) as sql.js holds a message: its body in history.db under `body_key`. */
function rawOf({ bytes: _bytes, cut: _cut, ended: _ended, ...meta }: ColdRow): RawMessage {
  return { ...meta, content: '', data: null };
}

/** Bodies appendMany writes for rows other than its messages (see there). */
export interface ExtraBodies {
  /** As messages: history.db stores each with its conversation and role. */
  bodies: readonly NewMessage[];
  /** Whether the transaction was applied, asked when it failed (by default: whether its first message is stored). */
  applied?: () => boolean;
}

export class MessagesRepo {
  /** Whether the schema has cold rows (migration 18), asked once. */
  private cold: boolean | undefined;
  /** Whether some conversation had cold rows when last asked (hasColdMessages). */
  private anyCold = false;
  /**
   * The database's last write the last planned append made (Database.lastWrite), and its messages' ids and
   * seqs: while that write stays the last, nothing was written since (every change is a write), so those
   * messages' rows still have those seqs (`seqOf`).
   */
  private appended: { at: number; ids: string[]; seqs: number[] } | undefined;
  /** The seq the next message's row gets (nextSeq), once read; read again after any other statement of `movesSeq`. */
  private next: number | undefined;
  private readonly seqWatch: WriteWatch;
  private seqSeen = 0;

  constructor(
    private readonly db: Database,
    private readonly history: HistoryStore,
    /** Whether a conversation's row is there (ConversationsRepo's owners, kept in memory: read-memo.ts). */
    private readonly exists: (conversationId: string) => boolean,
  ) {
    this.seqWatch = db.watch(movesSeq);
  }

  /**
   * The seq of the next message's row, taken: what AUTOINCREMENT would give it, kept in memory so that a
   * message's statements need not run to know it (writePlanned applies them later). One taken by a write
   * that then fails leaves a gap, which AUTOINCREMENT allows (a row deleted leaves one too).
   */
  private nextSeq(): number {
    if (this.next === undefined || this.seqWatch.version !== this.seqSeen) {
      this.seqSeen = this.seqWatch.version;
      this.next = this.db.get<{ n: number }>(NEXT_SEQ_SQL)!.n;
    }
    return this.next++;
  }

  /**
   * Inserts a message inside a caller's transaction (for store modules that write more in the same one).
   * With `bodyKey` its body is already durable in history.db; without, the body is kept inline and the
   * history maintenance moves it there later (history/maintenance.ts).
   */
  insertIn(tx: WriteTx, m: NewMessage, bodyKey?: number): void {
    runPlanned(tx, messageOps(m, this.nextSeq(), bodyKey));
  }

  /** Stores a message and bumps its conversation's `updated_at`, in one transaction. */
  async append(message: NewMessage): Promise<void> {
    await this.appendMany([message]);
  }

  /**
   * Stores several messages (e.g. a whole turn) in one transaction. The bodies are given keys at once and
   * handed to history.db (HistoryStore.write: the worker writes them in order, so a read never meets a
   * row without its body), and journaled with the rows: the journal's one fsync makes rows and bodies
   * durable together (WriteTx.keepBodies), and that is all this waits for. The worker's write is not
   * waited for (it is grouped with the bodies that follow, and `sync` covers it before the journal lets
   * go of the record), except while the worker is behind by more than HistoryStore allows in memory.
   * `alsoInTx` writes more in the same transaction (rows that must appear with these messages): statements
   * known before they run (a reply's usage row: the transaction is then planned, Database.writePlanned), or
   * a callback;
   * `options` are Database.write's (a turn's user message defers its sync: agent/user-commit.ts). `extra`:
   * more bodies written and journaled the same way, for rows `alsoInTx` writes (given their keys; a webhook
   * delivery's).
   */
  async appendMany(messages: readonly NewMessage[], alsoInTx?: ((tx: WriteTx, extra: KeyedBody[]) => void) | readonly PlannedOp[], options?: WriteOptions, extra?: ExtraBodies): Promise<void> {
    const sources = extra ? [...messages, ...extra.bodies] : messages;
    if (sources.length === 0) return;
    const { bodies, written, behind } = this.writeBodies(sources);
    let durable: Promise<void>;
    try {
      // Known before they run, its statements go after its record's hand-off (a reply: writePlanned). Not
      // when the record would wait behind a full disk's owed records: its seqs are then given in the write's
      // callback, as it runs (review20a: given before, a later message could take the same seq or a lower one).
      durable =
        typeof alsoInTx === 'function' || extra || !this.db.handsOffNow
          ? this.db.write((tx) => {
              messages.forEach((m, i) => this.insertIn(tx, m, bodies[i].key));
              tx.keepBodies(bodies);
              if (typeof alsoInTx === 'function') alsoInTx(tx, bodies.slice(messages.length));
              else if (alsoInTx) runPlanned(tx, alsoInTx);
            }, options)
          : this.appendPlanned(messages, bodies, alsoInTx, options);
    } catch (err) {
      this.discardBodies(bodies.map((b) => b.key));
      throw err;
    }
    // A transaction that failed is not applied: nothing refers to its bodies. They are discarded once the
    // worker answered, since a refused write makes them owed and they must not be owed again after.
    const applied = durable.catch(async (err: unknown) => {
      if (!(extra?.applied ?? (() => this.has(messages[0].id)))()) {
        await written.catch(() => undefined);
        this.discardBodies(bodies.map((b) => b.key));
      }
      throw err;
    });
    // Once the transaction is applied its record holds the bodies (keepBodies): bodies the worker could not
    // write are owed (history-store.ts), written later from memory, and the messages are durable all the
    // same, so that refusal is not theirs to fail.
    await (behind ? Promise.all([applied, written.catch(() => undefined)]) : applied);
  }

  /** appendMany's planned write (Database.writePlanned): the messages' statements, then `alsoInTx`'s. */
  private appendPlanned(messages: readonly NewMessage[], bodies: KeyedBody[], alsoInTx: readonly PlannedOp[] | undefined, options: WriteOptions | undefined): Promise<void> {
    const ops: PlannedOp[] = [];
    const seqs: number[] = [];
    for (let i = 0; i < messages.length; i++) {
      seqs.push(this.nextSeq());
      ops.push(...messageOps(messages[i], seqs[i], bodies[i].key));
    }
    if (alsoInTx) ops.push(...alsoInTx);
    const before = this.db.lastWrite;
    // Asked before the hand-off, so that a conversation not found or a client key stored journals nothing:
    // the statements are applied behind the record, after its writer may have acted on it (the model asked
    // about a user message), and can then no longer fail on those (anything else that uses sql.js applies
    // them first).
    const durable = this.db.writePlanned(ops, bodies, options, () => {
      for (let i = 0; i < messages.length; i++) {
        const { conversation_id: id, client_key: key } = messages[i];
        if (key != null && this.hasClientKey(key)) throw new Error('UNIQUE constraint failed: messages.client_key (a message with this client key is stored)');
        if (i > 0 && id === messages[i - 1].conversation_id) continue;
        if (!this.exists(id)) throw notFound(id);
      }
    });
    // Journaled as one record (a write behind a full disk's owed records moved it not at all; one voided
    // later moves it again): its rows have the seqs given to their INSERTs.
    this.appended = this.db.lastWrite === before + 1 ? { at: before + 1, ids: messages.map((m) => m.id), seqs } : undefined;
    return durable;
  }

  /**
   * Bodies written to history.db ahead of the transaction whose rows refer to them, which must journal
   * them (WriteTx.keepBodies): until then they are not durable (a webhook message waits in the inbox,
   * its body in history.db, until it joins its conversation). Resolves once the worker has written them.
   */
  async putBodies(messages: readonly NewMessage[]): Promise<KeyedBody[]> {
    const { bodies, written } = this.writeBodies(messages);
    this.history.post();
    await written;
    return bodies;
  }

  private writeBodies(messages: readonly NewMessage[]): ReturnType<HistoryStore['write']> {
    messages.forEach(checkMessage);
    return this.history.write(packedMap(messages, (m) => bodyOf(m, dataText(m))));
  }

  /**
   * Whether a message's row is in sql.js (applied: a write is applied at once, unless the journal still
   * owes records a full disk refused, then once they are written).
   */
  has(id: string): boolean {
    return this.db.get('SELECT 1 AS present FROM messages WHERE id = ?', [id]) !== undefined;
  }

  /** The seq of a message whose row is in sql.js (undefined: not applied, or gone). */
  seqOf(id: string): number | undefined {
    const appended = this.appended;
    // Closed, the read says so (the history cache forgets a closed store's conversation by it).
    const i = appended !== undefined && appended.at === this.db.lastWrite && this.db.isOpen ? appended.ids.indexOf(id) : -1;
    if (i >= 0) return appended!.seqs[i];
    return this.db.get<{ seq: number }>('SELECT seq FROM messages WHERE id = ?', [id])?.seq;
  }

  /** Bodies no transaction came to refer to; at worst (this fails too) the sweep at the next open removes them. */
  discardBodies(keys: readonly number[]): void {
    if (keys.length > 0) this.history.remove(keys).catch(() => {});
  }

  /** The text of a body stored ahead (putBodies); undefined when history.db does not have it. */
  async bodyText(key: number): Promise<string | undefined> {
    return (await this.history.get([key])).get(key)?.content;
  }

  /** Stores a message whose body putBodies stored (`message.content` is that body's text), with more in the same transaction. */
  async appendStored(message: NewMessage, bodyKey: number, alsoInTx?: (tx: WriteTx) => void): Promise<void> {
    await this.db.write((tx) => {
      this.insertIn(tx, message, bodyKey);
      alsoInTx?.(tx);
    });
  }

  async get(id: string): Promise<MessageRow | undefined> {
    return this.one(await this.metaOf(id));
  }

  /** A message's metadata (its body not read): its row in sql.js, else its cold row. */
  private async metaOf(id: string): Promise<RawMessage | undefined> {
    const hot = this.db.get<RawMessage>(`SELECT ${COLUMNS} FROM messages WHERE id = ?`, [id]);
    return hot ? this.live(hot) : this.coldOne(await this.history.cold({ kind: 'id', id }));
  }

  /**
   * A row in sql.js, unless its conversation was deleted: its rows are freed in batches after its row
   * went (conversations.ts trashConversation), and none of them is read meanwhile, as a cold row is not
   * once its conversation's `cold_seq` went with the row (coldOne).
   */
  private live(raw: RawMessage | undefined): RawMessage | undefined {
    return raw && this.exists(raw.conversation_id) ? raw : undefined;
  }

  /** The user message stored with this client key (a chat's sender and client_message_id). */
  async byClientKey(clientKey: string): Promise<MessageRow | undefined> {
    const raw = this.db.get<RawMessage>(`SELECT ${COLUMNS} FROM messages WHERE client_key = ?`, [clientKey]);
    return this.one(raw ? this.live(raw) : this.coldOne(await this.history.cold({ kind: 'client_key', clientKey })));
  }

  /**
   * Whether a user message was stored with this client key, among those whose metadata is in sql.js
   * (synchronous; recently active conversations). A cold one is found by byClientKey (history.db's index).
   */
  hasClientKey(clientKey: string): boolean {
    return this.db.get('SELECT 1 AS present FROM messages WHERE client_key = ?', [clientKey]) !== undefined;
  }

  /**
   * Whether any message's metadata went cold (history/cold.ts), so a key or id missing from sql.js may be
   * in history.db. Once true it stays so (a wrong true costs one indexed read there).
   */
  hasColdMessages(): boolean {
    this.cold ??= hasColdHistory(this.db);
    this.anyCold ||= this.cold && this.db.get('SELECT 1 AS present FROM conversations WHERE cold_count > 0 LIMIT 1') !== undefined;
    return this.anyCold;
  }

  /** The assistant reply to a user message: the last message of its turn, if it is the assistant's (turn-reply.ts). */
  async replyTo(message: Pick<MessageRow, 'conversation_id' | 'seq'>): Promise<MessageRow | undefined> {
    return this.one(await this.replyMetaOf(message));
  }

  /** replyTo's metadata (its body not read). */
  private async replyMetaOf(message: Pick<MessageRow, 'conversation_id' | 'seq'>): Promise<RawMessage | undefined> {
    if (!this.exists(message.conversation_id)) return undefined;
    // sql.js is read with `cold_seq`, before the wait for history.db (as in `after`).
    const cold = this.coldSeq(message.conversation_id);
    const hot = this.db.get<RawMessage>(turnReplySql(COLUMNS), [message.conversation_id, message.seq, message.conversation_id, message.seq]);
    let coldLast: ColdRow | undefined;
    if (message.seq <= cold) {
      [coldLast] = await this.history.cold({ kind: 'turn', conversationId: message.conversation_id, seq: message.seq, maxSeq: cold });
      if (coldLast?.ended) return coldLast.role === 'assistant' ? rawOf(coldLast) : undefined;
    }
    // Rows in sql.js all come after the cold ones: the turn goes on there if it has rows there.
    const raw = hot ?? (coldLast && rawOf(coldLast));
    return raw?.role === 'assistant' ? raw : undefined;
  }

  /**
   * The turn a message of this conversation belongs to: a user message starts one (its id is the turn's
   * id); any later message belongs to the last user message before it. Undefined when the message is
   * not of this conversation.
   */
  async turnOf(conversationId: string, messageId: string): Promise<string | undefined> {
    const message = await this.metaOf(messageId);
    if (message?.conversation_id !== conversationId) return undefined;
    if (message.role === 'user') return messageId;
    const hot = this.db.get<{ id: string }>(`SELECT id FROM messages WHERE conversation_id = ? AND seq < ? AND role = 'user' ORDER BY seq DESC LIMIT 1`, [conversationId, message.seq]);
    const cold = hot ? 0 : this.coldSeq(conversationId);
    return hot?.id ?? (cold > 0 ? (await this.history.cold({ kind: 'user_before', conversationId, seq: message.seq, maxSeq: cold }))[0]?.id : undefined);
  }

  /** The id of the reply that ended a turn (replyTo its user message), from the metadata alone: no body is read. */
  async replyOfTurn(conversationId: string, turnId: string): Promise<string | undefined> {
    const start = await this.metaOf(turnId);
    return start?.conversation_id === conversationId ? (await this.replyMetaOf(start))?.id : undefined;
  }

  /** The most recent `limit` messages of a conversation, oldest first. */
  async recent(conversationId: string, options: RecentOptions = {}): Promise<MessageRow[]> {
    const limit = Math.floor(options.limit ?? 50);
    if (!(limit > 0) || !this.exists(conversationId)) return [];
    const roles = options.includeTools ? '' : " AND role <> 'tool'";
    const rows = this.db.all<RawMessage>(`SELECT ${COLUMNS} FROM messages WHERE conversation_id = ?${roles} ORDER BY seq DESC LIMIT ?`, [conversationId, limit]);
    rows.reverse();
    const cold = rows.length < limit ? this.coldSeq(conversationId) : 0;
    if (cold === 0) return this.withBodies(rows);
    const older = await this.history.cold({ kind: 'recent', conversationId, maxSeq: cold, limit: limit - rows.length, includeTools: options.includeTools === true });
    return this.withBodies([...older.map(rawOf), ...rows]);
  }

  /** Every message of a conversation stored after `seq` (messages are append-only), oldest first. */
  async after(conversationId: string, seq: number): Promise<MessageRow[]> {
    if (!this.exists(conversationId)) return [];
    // sql.js's rows are read with `cold_seq`, before the wait for history.db: a move landing during it
    // deletes rows from sql.js that this cold read (up to the old `cold_seq`) does not ask for.
    const cold = this.coldSeq(conversationId);
    const rows = this.db.all<RawMessage>(`SELECT ${COLUMNS} FROM messages WHERE conversation_id = ? AND seq > ? ORDER BY seq`, [conversationId, seq]);
    const older = seq < cold ? await this.history.cold({ kind: 'after', conversationId, seq, maxSeq: cold }) : [];
    return this.withBodies(older.length === 0 ? rows : [...older.map(rawOf), ...rows]);
  }

  /** The highest seq of the conversation whose metadata moved to history.db (0: none; history/cold.ts). */
  private coldSeq(conversationId: string): number {
    this.cold ??= hasColdHistory(this.db);
    if (!this.cold) return 0;
    return this.db.get<{ cold_seq: number }>('SELECT cold_seq FROM conversations WHERE id = ?', [conversationId])?.cold_seq ?? 0;
  }

  /**
   * Whether a row read a moment ago is still stored (not deleted by retention or delete_conversation
   * meanwhile): in sql.js, or at or below its conversation's `cold_seq` (a cold copy above it is a
   * move sql.js has not taken over, and a deleted conversation has none).
   */
  private stillStored(row: Pick<RawMessage, 'seq' | 'conversation_id'>): boolean {
    return this.db.get('SELECT 1 AS present FROM messages WHERE seq = ?', [row.seq]) !== undefined || row.seq <= this.coldSeq(row.conversation_id);
  }

  /** A cold row found by id or key, if its conversation still holds it. */
  private coldOne(rows: ColdRow[]): RawMessage | undefined {
    const row = rows.find((r) => r.seq <= this.coldSeq(r.conversation_id));
    return row && rawOf(row);
  }

  /** Messages in the database, or in one conversation (those moved to history.db by their `cold_count`). */
  count(conversationId?: string): number {
    const row =
      conversationId === undefined
        ? this.db.get<{ n: number }>('SELECT (SELECT count(*) FROM messages) + (SELECT coalesce(sum(cold_count), 0) FROM conversations) AS n')
        : this.db.get<{ n: number }>('SELECT (SELECT count(*) FROM messages WHERE conversation_id = ?) + coalesce((SELECT cold_count FROM conversations WHERE id = ?), 0) AS n', [
            conversationId,
            conversationId,
          ]);
    return row?.n ?? 0;
  }

  private async one(raw: RawMessage | undefined): Promise<MessageRow | undefined> {
    return raw ? (await this.withBodies([raw]))[0] : undefined;
  }

  /**
   * Rows with their bodies from history.db; a row deleted meanwhile (retention, delete) is left out. A
   * body that is missing or unreadable reads as LOST_BODY_TEXT, never silently: history.db is then
   * reported damaged (/health).
   */
  private async withBodies(rows: RawMessage[]): Promise<MessageRow[]> {
    const keys = rows.flatMap((r) => (r.body_key === null ? [] : [r.body_key]));
    const bodies = await this.history.get(keys);
    const out: MessageRow[] = [];
    for (const row of rows) {
      const body: Pick<BodyOut, 'content' | 'data'> | undefined = row.body_key === null ? row : bodies.get(row.body_key);
      if (!body) {
        if (!this.stillStored(row)) continue;
        this.history.noteDamage(`message ${row.id} has no readable body`);
        out.push(messageRow(row, LOST_BODY_TEXT, null));
        continue;
      }
      out.push(messageRow(row, body.content, parseData(body.data)));
    }
    return out;
  }

  /**
   * Messages (user and assistant) containing every word of `query`, the last one as a prefix; newest
   * first. Words are quoted, so FTS5 syntax typed by a user has no effect.
   */
  async search(query: string, options: { conversationId?: string; limit?: number } = {}): Promise<MessageMatch[]> {
    const match = toMatchExpression(query);
    const limit = Math.min(MAX_SEARCH_LIMIT, Math.max(1, Math.floor(options.limit ?? 20)));
    const raw = await this.history.search(match, options.conversationId ?? null, limit + SEARCH_SLACK);
    if (raw.length === 0) return [];
    const keys = raw.map((h) => h.key);
    const meta = new Map(
      this.db
        .all<Pick<MessageRow, 'seq' | 'id' | 'conversation_id' | 'role' | 'timestamp'> & { body_key: number }>(
          `SELECT seq, id, conversation_id, role, timestamp, body_key FROM messages WHERE body_key IN (${keys.map(() => '?').join(', ')})`,
          keys,
        )
        .filter((m) => this.exists(m.conversation_id))
        .map((m) => [m.body_key, m]),
    );
    const missing = keys.filter((k) => !meta.has(k));
    if (missing.length > 0) {
      for (const m of await this.history.cold({ kind: 'body_keys', keys: missing })) if (m.seq <= this.coldSeq(m.conversation_id)) meta.set(m.body_key, m);
    }
    const hits: MessageMatch[] = [];
    for (const h of raw) {
      const m = meta.get(h.key);
      if (!m) continue; // a body whose message is not (or no longer) stored
      hits.push({ message_id: m.id, conversation_id: m.conversation_id, role: m.role, timestamp: m.timestamp, seq: m.seq, ...parseSnippet(h.snippet) });
      if (hits.length === limit) break;
    }
    return hits;
  }
}
