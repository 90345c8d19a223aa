import { DELIVERY_BODY_ROLE } from './body-refs';
import type { Database, WriteTx } from './database';
import type { KeyedBody } from './history/protocol';
import { LOST_BODY_TEXT, type ExtraBodies, type MessagesRepo } from './messages';
import type { NewMessage } from './types';
import { wellFormed } from '../protocol/code-points';
import { previewOf } from '../protocol/preview';

/**
 * The webhook channel's tables (migration 2):
 * - `webhook_inbox`: one row per accepted incoming message (keyed by the user message's id), `pending`
 *   until the agent's reply is stored (`answered`) or the message cannot be answered (`failed`, with
 *   an error callback). Pending rows are re-run after a restart.
 * - `webhook_idempotency`: the first answer to an `Idempotency-Key` per account, for 24 h.
 * - `webhook_deliveries`: the outbox. A row is created in the same transaction as the reply (or error
 *   callback) it carries, is `pending` while it has a `next_attempt_ms`, and ends `delivered` or `failed`.
 *   Its body is in history.db (`body_key`, migration 21) until delivered: sql.js holds its whole database
 *   in memory, and a receiver down for the retry window let every reply pile up there. A row written
 *   before holds its body inline.
 */

export type InboxStatus = 'pending' | 'answered' | 'failed';
export type DeliveryRowStatus = 'pending' | 'delivered' | 'failed';
/** A reply, or an error callback (the incoming message could not be answered). */
export type DeliveryKind = 'reply' | 'error';

export interface InboxRow {
  seq: number;
  message_id: string;
  account: string;
  conversation_id: string;
  /** The account's outgoing_url when the message came in (used if the account is removed meanwhile). */
  url: string;
  status: InboxStatus;
  received_at: string;
  finished_at: string | null;
  reply_id: string | null;
  error: string | null;
}

export interface DeliveryRow {
  seq: number;
  /** Also the `webhook-id` header: stable across retries. */
  id: string;
  account: string;
  url: string;
  conversation_id: string;
  /** The reply message it carries. */
  message_id: string;
  /**
   * The JSON body of a row written before history.db held them, byte for byte what is sent (and signed)
   * on every attempt; '' when `body_key` holds it, and once delivered. Read it with WebhooksRepo.deliveryBody.
   */
  body: string;
  /** The body in history.db, until delivered (null: inline, or delivered). */
  body_key: number | null;
  kind: DeliveryKind;
  status: DeliveryRowStatus;
  /** Attempts made, all rounds. */
  attempts: number;
  /** Attempts since the delivery was created or last retried by hand: the backoff exponent. */
  round_attempts: number;
  created_at: string;
  /** Epoch ms of the next attempt; null once delivered or failed. */
  next_attempt_ms: number | null;
  /** Epoch ms after which a failed attempt is not retried any more. */
  give_up_ms: number;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  finished_at: string | null;
}

export interface AcceptInput {
  account: string;
  /** `webhook:<account>`: the conversation's source, and who may continue it. */
  source: string;
  url: string;
  /** Continue this conversation (it must belong to `source`), else start `newConversation`. */
  conversationId?: string;
  newConversation: { id: string; title: string };
  message: { id: string; content: string; user_id?: string };
  idempotencyKey?: string;
  now: number;
  /** How long an Idempotency-Key answer is kept. */
  idempotencyMs: number;
}

export type AcceptResult =
  { kind: 'accepted'; conversation_id: string; message_id: string; inbox: InboxRow } | { kind: 'duplicate'; conversation_id: string; message_id: string } | { kind: 'not_found' };

export interface NewDelivery {
  id: string;
  account: string;
  url: string;
  body: string;
  now: number;
  give_up_ms: number;
}

export interface AttemptRecord {
  status: DeliveryRowStatus;
  /** The URL it was sent to (an account's changed outgoing_url applies to its pending deliveries). */
  url: string;
  http_status: number | null;
  error: string | null;
  next_attempt_ms: number | null;
  now: number;
}

export interface DeliveryFilter {
  account?: string;
  status?: DeliveryRowStatus;
  limit: number;
}

const INBOX_COLUMNS = 'seq, message_id, account, conversation_id, url, status, received_at, finished_at, reply_id, error';
const DELIVERY_COLUMNS =
  'seq, id, account, url, conversation_id, message_id, body, body_key, kind, status, attempts, round_attempts, created_at, next_attempt_ms, give_up_ms, last_attempt_at, last_status, last_error, finished_at';

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A new pending delivery, due at once, carrying `messageId` (a reply, or the message an error callback is
 * about); its body sent to history.db with the transaction, which journals it (MessagesRepo.appendMany's `extra`).
 */
function insertDelivery(tx: WriteTx, delivery: NewDelivery, body: KeyedBody, kind: DeliveryKind, messageId: string): void {
  tx.run(
    `INSERT INTO webhook_deliveries (id, account, url, conversation_id, message_id, body, body_key, kind, status, created_at, next_attempt_ms, give_up_ms)
     VALUES (?, ?, ?, ?, ?, '', ?, ?, 'pending', ?, ?, ?)`,
    [delivery.id, delivery.account, delivery.url, body.conversation_id, messageId, body.key, kind, iso(delivery.now), delivery.now, delivery.give_up_ms],
  );
}

/** The inbox row keeps only the preview of its text (see WebhooksRepo.inboxPreview). */
function keepPreviewOnly(tx: WriteTx, messageId: string, content: string): void {
  const preview = previewOf(content);
  if (preview !== content) tx.run('UPDATE webhook_inbox SET content = ? WHERE message_id = ?', [preview, messageId]);
}

export class WebhooksRepo {
  /** `messages` stores the inbox's messages: their bodies in history.db first, the rest with this module's rows in one transaction. */
  constructor(
    private readonly db: Database,
    private readonly messages: MessagesRepo,
  ) {}

  /**
   * Stores an incoming message: its body in history.db first, then in one transaction the conversation
   * (when new), the inbox row referring to the body, plus the Idempotency-Key answer. A key seen within
   * the window answers the first result and writes nothing; a conversation of another source is
   * `not_found` and writes nothing (the body is discarded). Resolves once durable (a duplicate too: it
   * waits for the first request's write).
   */
  async accept(input: AcceptInput): Promise<AcceptResult> {
    // A repeated key needs no body (checked again in the transaction, which decides).
    const repeated = input.idempotencyKey !== undefined && this.firstAnswer(this.db, input) !== undefined;
    const conversationId = input.conversationId ?? input.newConversation.id;
    // Well-formed as every stored text (messages.ts checkMessage): the inbox's preview is its text's too.
    const content = wellFormed(input.message.content);
    const [body] = repeated ? [] : await this.messages.putBodies([{ id: input.message.id, conversation_id: conversationId, role: 'user', content, timestamp: iso(input.now) }]);
    const bodyKey = body?.key;
    try {
      const result = await this.db.write((tx) => {
        const answer = this.acceptInTx(tx, input, content, bodyKey);
        // The inbox row refers to it: journaled with the row, its one durable commit.
        if (answer.kind === 'accepted' && body) tx.keepBodies([body]);
        return answer;
      });
      if (result.kind !== 'accepted' && bodyKey !== undefined) this.messages.discardBodies([bodyKey]);
      return result;
    } catch (error) {
      if (bodyKey !== undefined) this.messages.discardBodies([bodyKey]);
      throw error;
    }
  }

  private firstAnswer(db: Pick<WriteTx, 'get'>, input: AcceptInput): { conversation_id: string; message_id: string } | undefined {
    return db.get<{ conversation_id: string; message_id: string }>('SELECT conversation_id, message_id FROM webhook_idempotency WHERE account = ? AND key = ? AND created_ms > ?', [
      input.account,
      input.idempotencyKey!,
      input.now - input.idempotencyMs,
    ]);
  }

  /** accept's transaction; without `bodyKey` the text is kept inline (as rows written before history.db held it). */
  private acceptInTx(tx: WriteTx, input: AcceptInput, content: string, bodyKey: number | undefined): AcceptResult {
    if (input.idempotencyKey !== undefined) {
      const first = this.firstAnswer(tx, input);
      if (first) return { kind: 'duplicate', ...first };
    }
    const timestamp = iso(input.now);
    let conversationId: string;
    if (input.conversationId !== undefined) {
      const conversation = tx.get<{ source: string }>('SELECT source FROM conversations WHERE id = ?', [input.conversationId]);
      if (!conversation || conversation.source !== input.source) return { kind: 'not_found' };
      conversationId = input.conversationId;
    } else {
      conversationId = input.newConversation.id;
      tx.run('INSERT INTO conversations (id, title, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [
        conversationId,
        wellFormed(input.newConversation.title),
        input.source,
        timestamp,
        timestamp,
      ]);
    }
    // The message joins its conversation when its turn comes (admit), so a conversation's history
    // never shows a later message before the reply to an earlier one.
    const message = input.message;
    tx.run('INSERT INTO webhook_inbox (message_id, account, conversation_id, url, status, received_at, content, user_id, body_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
      message.id,
      input.account,
      conversationId,
      input.url,
      'pending',
      timestamp,
      bodyKey === undefined ? content : previewOf(content),
      // The sender's id as the client gave it, well-formed as the message's own (messages.ts checkMessage).
      message.user_id === undefined ? null : wellFormed(message.user_id),
      bodyKey ?? null,
    ]);
    if (input.idempotencyKey !== undefined) {
      // An expired answer under the same key is replaced.
      tx.run(
        `INSERT INTO webhook_idempotency (account, key, conversation_id, message_id, created_ms) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (account, key) DO UPDATE SET conversation_id = excluded.conversation_id, message_id = excluded.message_id, created_ms = excluded.created_ms`,
        [input.account, input.idempotencyKey, conversationId, message.id, input.now],
      );
    }
    const inbox = tx.get<InboxRow>(`SELECT ${INBOX_COLUMNS} FROM webhook_inbox WHERE message_id = ?`, [message.id])!;
    return { kind: 'accepted', conversation_id: conversationId, message_id: message.id, inbox };
  }

  /** Inbox rows not answered yet, in arrival order. */
  pendingInbox(): InboxRow[] {
    return this.db.all<InboxRow>(`SELECT ${INBOX_COLUMNS} FROM webhook_inbox WHERE status = 'pending' ORDER BY seq`);
  }

  /**
   * The preview of an inbox message (shown while it waits behind a running turn). Its body is in
   * history.db (`body_key`) until it joins its conversation: sql.js holds its whole database in memory,
   * and the body kept here for a day per message let unauthenticated posts fill it (issue 20). A row
   * written before that holds its text inline, cut to its preview once admitted or failed.
   */
  inboxPreview(messageId: string): string | undefined {
    const content = this.db.get<{ content: string }>('SELECT content FROM webhook_inbox WHERE message_id = ?', [messageId])?.content;
    return content === undefined ? undefined : previewOf(content);
  }

  getInbox(messageId: string): InboxRow | undefined {
    return this.db.get<InboxRow>(`SELECT ${INBOX_COLUMNS} FROM webhook_inbox WHERE message_id = ?`, [messageId]);
  }

  /** The earliest row of the conversation that came in before `seq` and is still pending, if any. */
  earlierPending(conversationId: string, seq: number): InboxRow | undefined {
    return this.db.get<InboxRow>(`SELECT ${INBOX_COLUMNS} FROM webhook_inbox WHERE status = 'pending' AND conversation_id = ? AND seq < ? ORDER BY seq LIMIT 1`, [conversationId, seq]);
  }

  /**
   * Puts an accepted message into its conversation, when its turn to be answered comes. Done once:
   * after a crash the turn is run again and finds the message already there.
   */
  async admit(messageId: string): Promise<void> {
    if (this.db.get('SELECT 1 AS present FROM messages WHERE id = ?', [messageId])) return;
    const row = this.db.get<{ conversation_id: string; content: string; user_id: string | null; received_at: string; body_key: number | null }>(
      'SELECT conversation_id, content, user_id, received_at, body_key FROM webhook_inbox WHERE message_id = ?',
      [messageId],
    );
    if (!row) throw new Error(`webhook inbox row ${messageId} not found`);
    const message: NewMessage = { id: messageId, conversation_id: row.conversation_id, role: 'user', content: row.content, timestamp: row.received_at, user_id: row.user_id ?? undefined };
    // A row from before history.db held inbox bodies keeps its text inline: it is stored as any message.
    if (row.body_key === null) return this.messages.appendMany([message], (tx) => keepPreviewOnly(tx, messageId, row.content));
    const key = row.body_key;
    // Its text (read back for the message's size and its conversation's preview) becomes the message's body.
    const content = await this.messages.bodyText(key);
    if (content === undefined) throw new Error(`the body of webhook message ${messageId} is missing from history.db`);
    await this.messages.appendStored({ ...message, content }, key, (tx) => tx.run('UPDATE webhook_inbox SET body_key = NULL WHERE message_id = ?', [messageId]));
  }

  /**
   * The reply, its inbox row marked answered and its delivery (and `alsoInTx`: the turn's usage), in one
   * durable transaction; the delivery's body goes to history.db with the reply's (MessagesRepo.appendMany):
   * a history.db that refuses the write makes both owed, the reply is stored all the same.
   */
  async answer(inboxMessageId: string, reply: NewMessage, delivery: NewDelivery, alsoInTx?: (tx: WriteTx) => void): Promise<void> {
    await this.messages.appendMany(
      [reply],
      (tx, [body]) => {
        alsoInTx?.(tx);
        const done = tx.run(`UPDATE webhook_inbox SET status = 'answered', reply_id = ?, finished_at = ? WHERE message_id = ? AND status = 'pending'`, [reply.id, iso(delivery.now), inboxMessageId]);
        if (done.changes === 0) throw new Error(`webhook inbox row ${inboxMessageId} is not pending`);
        insertDelivery(tx, delivery, body, 'reply', reply.id);
      },
      undefined,
      this.deliveryBodyOf(delivery, reply.conversation_id),
    );
  }

  /** A delivery's body as appendMany writes it with its transaction; that transaction was applied when the delivery is stored. */
  private deliveryBodyOf(delivery: NewDelivery, conversationId: string): ExtraBodies {
    return {
      bodies: [{ id: delivery.id, conversation_id: conversationId, role: DELIVERY_BODY_ROLE, content: delivery.body, timestamp: iso(delivery.now) }],
      applied: () => this.getDelivery(delivery.id) !== undefined,
    };
  }

  /**
   * The message cannot be answered: its row marked failed and the error callback telling the sender, in
   * one durable transaction (the delivery's message_id is the incoming message's; its body written to
   * history.db with it, as answer's).
   */
  async failWithCallback(inboxMessageId: string, error: string, delivery: NewDelivery & { conversation_id: string }): Promise<void> {
    // Well-formed as every stored text (a lone surrogate would read back as three U+FFFD).
    const detail = wellFormed(error);
    await this.messages.appendMany([], (tx, [body]) => this.failInTx(tx, inboxMessageId, detail, delivery, body), undefined, this.deliveryBodyOf(delivery, delivery.conversation_id));
  }

  private failInTx(tx: WriteTx, inboxMessageId: string, error: string, delivery: NewDelivery, body: KeyedBody): void {
    const done = tx.run(`UPDATE webhook_inbox SET status = 'failed', error = ?, finished_at = ? WHERE message_id = ? AND status = 'pending'`, [error, iso(delivery.now), inboxMessageId]);
    if (done.changes === 0) throw new Error(`webhook inbox row ${inboxMessageId} is not pending`);
    // Never answered, never run again: the sender has its text, and its error callback says why.
    const row = tx.get<{ content: string; body_key: number | null }>('SELECT content, body_key FROM webhook_inbox WHERE message_id = ?', [inboxMessageId]);
    keepPreviewOnly(tx, inboxMessageId, row?.content ?? '');
    if (row?.body_key !== null && row?.body_key !== undefined) {
      // The history maintenance deletes the body (as a deleted message's).
      tx.run('INSERT OR IGNORE INTO history_trash (body_key) VALUES (?)', [row.body_key]);
      tx.run('UPDATE webhook_inbox SET body_key = NULL WHERE message_id = ?', [inboxMessageId]);
    }
    insertDelivery(tx, delivery, body, 'error', inboxMessageId);
  }

  getDelivery(id: string): DeliveryRow | undefined {
    return this.db.get<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ?`, [id]);
  }

  /**
   * The body a delivery sends, byte for byte (it is signed): from history.db, or the row's own (written
   * before history.db held them). Undefined when history.db lost it (a damaged file; after
   * `serve --recover` it reads LOST_BODY_TEXT there, which is not the body either).
   */
  async deliveryBody(row: Pick<DeliveryRow, 'body' | 'body_key'>): Promise<string | undefined> {
    if (row.body_key === null) return row.body;
    const text = await this.messages.bodyText(row.body_key);
    return text === LOST_BODY_TEXT ? undefined : text;
  }

  /** Pending deliveries due at `now`, earliest first (a page of them; ids only, the bodies stay put). */
  dueDeliveries(now: number, limit: number, offset = 0): { id: string; account: string }[] {
    return this.db.all<{ id: string; account: string }>(`SELECT id, account FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms <= ? ORDER BY next_attempt_ms, seq LIMIT ? OFFSET ?`, [
      now,
      limit,
      offset,
    ]);
  }

  /** The earliest next attempt strictly after `now`, if any. */
  nextAttemptAfter(now: number): number | undefined {
    const row = this.db.get<{ t: number | null }>(`SELECT min(next_attempt_ms) AS t FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms > ?`, [now]);
    return row?.t ?? undefined;
  }

  /**
   * Records one attempt's outcome (durable). A delivered body is never sent again: the history
   * maintenance deletes it from history.db (history_trash), a row's inline one is cleared. A failed
   * delivery keeps its body, for retry_delivery.
   */
  async recordAttempt(id: string, attempt: AttemptRecord): Promise<void> {
    const delivered = attempt.status === 'delivered';
    await this.db.write((tx) => {
      if (delivered) tx.run('INSERT OR IGNORE INTO history_trash (body_key) SELECT body_key FROM webhook_deliveries WHERE id = ? AND body_key IS NOT NULL', [id]);
      tx.run(
        `UPDATE webhook_deliveries SET attempts = attempts + 1, round_attempts = round_attempts + 1, status = ?, url = ?, last_attempt_at = ?,
         last_status = ?, last_error = ?, next_attempt_ms = ?, finished_at = ?${delivered ? ", body = '', body_key = NULL" : ''} WHERE id = ?`,
        [
          attempt.status,
          attempt.url,
          iso(attempt.now),
          attempt.http_status,
          attempt.error === null ? null : wellFormed(attempt.error),
          attempt.status === 'pending' ? attempt.next_attempt_ms : null,
          attempt.status === 'pending' ? null : iso(attempt.now),
          id,
        ],
      );
    });
  }

  /** Makes a delivery that is not delivered pending again, due now, with a new retry window. */
  async retryDelivery(id: string, now: number, giveUpMs: number): Promise<DeliveryRow | undefined> {
    return this.db.write((tx) => {
      tx.run(
        `UPDATE webhook_deliveries SET status = 'pending', next_attempt_ms = ?, give_up_ms = ?, round_attempts = 0, finished_at = NULL
         WHERE id = ? AND status != 'delivered'`,
        [now, giveUpMs, id],
      );
      return tx.get<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ?`, [id]);
    });
  }

  /** Newest first, optionally of one account and/or status. */
  listDeliveries(filter: DeliveryFilter): DeliveryRow[] {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (filter.account !== undefined) {
      where.push('account = ?');
      params.push(filter.account);
    }
    if (filter.status !== undefined) {
      where.push('status = ?');
      params.push(filter.status);
    }
    const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    return this.db.all<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries${clause} ORDER BY seq DESC LIMIT ?`, [...params, Math.max(0, Math.floor(filter.limit))]);
  }

  countDeliveries(status?: DeliveryRowStatus): number {
    const row =
      status === undefined
        ? this.db.get<{ n: number }>('SELECT count(*) AS n FROM webhook_deliveries')
        : this.db.get<{ n: number }>('SELECT count(*) AS n FROM webhook_deliveries WHERE status = ?', [status]);
    return row?.n ?? 0;
  }

  /**
   * Forgets what is no longer needed: Idempotency-Key answers older than their window, inbox rows that
   * ended (answered, or failed: its error callback says why) before `inboxBeforeMs`, delivered deliveries
   * before `deliveredBeforeMs` and failed ones before `failedBeforeMs` (kept that long to be seen by
   * list_deliveries and sent again by retry_delivery), their bodies to the history maintenance's trash.
   * Pending rows are never deleted, however old (retry_delivery makes a failed one pending again).
   */
  async prune(cutoffs: { idempotencyBeforeMs: number; inboxBeforeMs: number; deliveredBeforeMs: number; failedBeforeMs: number }): Promise<number> {
    return this.db.write((tx) => {
      let removed = tx.run('DELETE FROM webhook_idempotency WHERE created_ms <= ?', [cutoffs.idempotencyBeforeMs]).changes;
      removed += tx.run(`DELETE FROM webhook_inbox WHERE status IN ('answered', 'failed') AND finished_at < ?`, [iso(cutoffs.inboxBeforeMs)]).changes;
      removed += tx.run(`DELETE FROM webhook_deliveries WHERE status = 'delivered' AND finished_at < ?`, [iso(cutoffs.deliveredBeforeMs)]).changes;
      const failed = `FROM webhook_deliveries WHERE status = 'failed' AND finished_at < ?`;
      tx.run(`INSERT OR IGNORE INTO history_trash (body_key) SELECT body_key ${failed} AND body_key IS NOT NULL`, [iso(cutoffs.failedBeforeMs)]);
      removed += tx.run(`DELETE ${failed}`, [iso(cutoffs.failedBeforeMs)]).changes;
      return removed;
    });
  }
}
