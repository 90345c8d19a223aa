import { randomUUID } from 'node:crypto';
import type { TurnEnd, TurnFailure, TurnStarter } from '../../commands/context';
import type { OpenSession, SessionOptions } from '../../commands/door';
import type { WebhookAccount, WebhookErrorBody, WebhookOutgoingBody } from '../../protocol';
import type { Logger } from '../../log/logger';
import type { InboxRow, NewDelivery, Store } from '../../store';
import { backoffMs, retryWindowMs, type OutboxTimings } from './outbox';
import { budgetRefusal, type BudgetRefusal } from './budget';

export interface InboxDeps {
  store: Store;
  /**
   * The turn runner (commands/turns/turn-runner.ts), as for any chat: a stop past its grace period
   * cancels the turn, a user may cancel it by conversation, its events reach the conversation's
   * followers, and `turn.ended` goes out once it ends for good.
   */
  turns: TurnStarter;
  /**
   * The service's door: each account is one session (source `webhook:<account>`, no one to answer
   * permission prompts), whose turns are tracked in flight, so graceful stop waits for them as for any
   * client's command, and the event filters treat the account like any client.
   */
  openSession(options: SessionOptions): OpenSession;
  accounts: () => ReadonlyMap<string, WebhookAccount>;
  logger: Logger;
  /** Told of each delivery before its transaction, and again once it is durable (then it may be sent). */
  outbox: { expect(deliveryId: string): void; confirm(deliveryId: string): void };
  /** Backoff between tries of a turn the provider failed for a passing reason (as deliveries back off). */
  retry: Pick<OutboxTimings, 'retryBaseMs' | 'retryMaxMs'>;
  /** Agent runs in progress at once for all webhook accounts. Default 32. */
  concurrency?: number;
}

/** Thrown inside a conversation's turn by a message that must wait for an earlier one still pending. */
class WaitingBehind extends Error {}

/** Thrown inside a conversation's turn by a message whose account has spent its daily budget: it is not run. */
class OverBudget extends Error {
  constructor(readonly refusal: BudgetRefusal) {
    super(refusal.error);
  }
}

/**
 * Answers accepted webhook messages. The inbox row is the work item: the agent answers the stored
 * user message, and the reply, the row's `answered` mark and the outgoing delivery are written in one
 * transaction. A row still pending after a crash or a stop is answered when the service starts again.
 *
 * An accepted message is answered eventually (docs/protocol.md): a turn the provider failed for a passing
 * reason (5xx, 429, network, timeout) is tried again with backoff, honouring Retry-After, until the
 * account's retry window (counted from its arrival) is over; then, or at once for a failure that will
 * not pass (401, a refused request), the sender gets a signed error callback instead of a reply, written
 * with the row's `failed` mark. The row stays pending meanwhile, so a restart picks it up again.
 *
 * Messages of one conversation are answered in arrival order: the agent serializes per conversation,
 * rows are handed to it in order, and a message whose turn comes while an earlier one of its
 * conversation is still pending (waiting to be retried) waits for it, out of the conversation.
 */
export class WebhookInbox {
  private readonly log: Logger;
  private readonly limit: number;
  private readonly queued = new Set<string>();
  private readonly waiting: (() => void)[] = [];
  /** Failed tries of each message still being retried (in memory: after a restart the backoff starts over). */
  private readonly failedTries = new Map<string, number>();
  private readonly retryTimers = new Map<string, NodeJS.Timeout>();
  /** Rows waiting for an earlier row of their conversation to be answered or to fail for good. */
  private readonly parked = new Map<string, InboxRow[]>();
  private active = 0;
  private stopped = false;
  /** Each account's session of the door, opened at its first message. */
  private readonly sessions = new Map<string, OpenSession>();

  constructor(private readonly deps: InboxDeps) {
    this.log = deps.logger.child({ component: 'webhook' });
    this.limit = deps.concurrency ?? 32;
  }

  /** Re-runs every pending row (at start: those accepted but not answered before the last stop or crash). */
  resume(): number {
    const rows = this.deps.store.webhooks.pendingInbox();
    if (rows.length > 0) this.log.info('webhook.inbox_resumed', { pending: rows.length });
    for (const row of rows) this.enqueue(row);
    return rows.length;
  }

  enqueue(row: InboxRow): void {
    if (this.stopped || this.queued.has(row.message_id)) return;
    this.queued.add(row.message_id);
    void this.process(row).finally(() => this.queued.delete(row.message_id));
  }

  /** No new runs start; rows not started (or waiting to be retried) stay pending in the database. Runs in progress finish (the agent's). */
  stop(): void {
    this.stopped = true;
    for (const timer of this.retryTimers.values()) clearTimeout(timer);
    this.retryTimers.clear();
    const waiting = this.waiting.splice(0);
    this.active += waiting.length;
    for (const wake of waiting) wake();
  }

  private async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active += 1;
      return;
    }
    // The slot is handed over by release(), so `active` stays as it is.
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active -= 1;
  }

  private async process(row: InboxRow): Promise<void> {
    await this.acquire();
    try {
      if (this.stopped) return;
      const session = this.sessionOf(row.account);
      await session.track(this.answer(row, session));
      if (this.deps.store.webhooks.getInbox(row.message_id)?.status !== 'pending') this.settled(row);
    } catch (error) {
      this.log.error('webhook.inbox_crashed', { message: row.message_id, error });
    } finally {
      this.release();
    }
  }

  /** The account's session; a new one if the service closed the last (the door closes every session at stop). */
  private sessionOf(account: string): OpenSession {
    const open = this.sessions.get(account);
    if (open?.isOpen) return open;
    // A webhook sender hears of its turn by the outbox's callback, not live, so nothing is sent to it.
    const session = this.deps.openSession({ source: { kind: 'webhook', account }, canAnswerPermissions: false, send: () => undefined });
    this.sessions.set(account, session);
    return session;
  }

  /** The row is answered or failed for good: the messages of its conversation waiting behind it go on. */
  private settled(row: InboxRow): void {
    this.failedTries.delete(row.message_id);
    const waiting = this.parked.get(row.conversation_id);
    if (!waiting) return;
    this.parked.delete(row.conversation_id);
    // After this turn has let go of them (enqueue skips rows still being processed).
    setImmediate(() => waiting.sort((a, b) => a.seq - b.seq).forEach((r) => this.enqueue(r)));
  }

  private park(row: InboxRow): void {
    // The earlier row may have settled while this turn was being turned away: then go on at once.
    if (!this.deps.store.webhooks.earlierPending(row.conversation_id, row.seq)) return void setImmediate(() => this.enqueue(row));
    const waiting = this.parked.get(row.conversation_id) ?? [];
    waiting.push(row);
    this.parked.set(row.conversation_id, waiting);
  }

  /**
   * First in the conversation's turn, before anything is made for it: behind an earlier message still
   * pending (waiting for its retry) it parks, and only its own turn asks the budget, so a later message
   * is never refused for good while an earlier one of its conversation still waits.
   */
  private mayStart(row: InboxRow): void {
    this.refuseOutOfOrder(row);
    this.refuseOverBudget(row);
  }

  /** Inside the conversation's turn: the message joins the conversation, unless an earlier one is still pending. */
  private async admitInOrder(row: InboxRow): Promise<void> {
    this.refuseOutOfOrder(row);
    // Again: a worktree's checkout made just before may have outlasted other turns of the account.
    this.refuseOverBudget(row);
    await this.deps.store.webhooks.admit(row.message_id);
  }

  private refuseOutOfOrder(row: InboxRow): void {
    if (this.deps.store.webhooks.earlierPending(row.conversation_id, row.seq)) throw new WaitingBehind();
  }

  /** Checked when its turn comes, so the usage of the turns before it (of its conversation too) counts. */
  private refuseOverBudget(row: InboxRow): void {
    const refusal = budgetRefusal(this.deps.store, row.account, this.deps.accounts().get(row.account));
    if (refusal) throw new OverBudget(refusal);
  }

  private async answer(row: InboxRow, session: OpenSession): Promise<void> {
    const { store } = this.deps;
    const log = this.log.child({ account: row.account, conversation: row.conversation_id, message: row.message_id });
    const current = store.webhooks.getInbox(row.message_id);
    if (!current || current.status !== 'pending') return;
    if (!store.conversations.get(row.conversation_id)) {
      log.warn('webhook.answer_skipped', { reason: 'conversation deleted' });
      await this.sendError(row, 'the conversation was deleted before this message was answered', log);
      return;
    }
    const account = this.deps.accounts().get(row.account);
    if (!account) log.warn('webhook.account_removed', { note: 'answering a message accepted before its account was removed' });
    let deliveryId = '';
    let turnError: unknown;
    await this.deps.turns
      .run({
        session: session.session,
        requestId: row.message_id,
        message: {
          kind: 'admitted',
          conversationId: row.conversation_id,
          clientMessageId: row.message_id,
          // Its preview (the inbox keeps only that; the body waits in history.db).
          text: store.webhooks.inboxPreview(row.message_id) ?? '',
          mayStart: () => this.mayStart(row),
          admit: () => this.admitInOrder(row),
          model: account?.model,
          storeReply: async (reply, alsoInTx) => {
            const body: WebhookOutgoingBody = { message: reply.content, conversation_id: reply.conversation_id };
            const delivery = this.newDelivery(row, body);
            deliveryId = delivery.id;
            await store.webhooks.answer(row.message_id, reply, delivery, alsoInTx);
            this.deps.outbox.confirm(deliveryId);
          },
        },
        settle: (end) => {
          if (end.outcome === 'failed') turnError = end.error;
          return this.settle(row, end, log, deliveryId);
        },
      })
      .catch((error: unknown) => {
        // The turn's failure was settled (retried, parked, or told to the sender); anything else is a crash.
        if (error !== turnError) throw error;
      });
  }

  /**
   * The message's turn ended: the row is answered, retried later, left pending for the next start, or
   * failed with the sender told. True when the turn is over for good (then `turn.ended` goes out).
   */
  private async settle(row: InboxRow, end: TurnEnd, log: Logger, deliveryId: string): Promise<boolean> {
    switch (end.outcome) {
      case 'answered':
        log.info('webhook.answered', { delivery: deliveryId });
        return true;
      case 'removed':
        // Taken out of the queue before its turn began: it ends for good, the sender is told, no turn ended.
        await this.sendError(row, 'removed by the user before it was answered', log);
        return false;
      case 'cancelled':
        if (this.stopped) {
          log.info('webhook.answer_interrupted', { note: 'still pending; answered after restart' });
          return false;
        }
        // A user stopped it (cancel by conversation_id): it ends for good, and the sender is told.
        await this.sendError(row, 'cancelled by the user', log);
        return true;
      case 'failed':
        if (end.error instanceof WaitingBehind) {
          this.park(row);
          return false;
        }
        if (end.error instanceof OverBudget) {
          log.warn('webhook.over_budget', { error: end.error.refusal.error });
          await this.sendError(row, { detail: end.error.refusal.error, forSender: end.error.refusal.error, code: end.error.refusal.code }, log);
          return false;
        }
        // Stopping (the store closing under a run): leave the row pending for the next start.
        if (this.stopped) {
          log.warn('webhook.answer_interrupted', { error: end.error });
          return false;
        }
        return this.failed(row, end.failure, log);
    }
  }

  /** Plans another try of a passing failure within the retry window (false); otherwise tells the sender (true: failed for good). */
  private async failed(row: InboxRow, failure: TurnFailure, log: Logger): Promise<boolean> {
    const tries = (this.failedTries.get(row.message_id) ?? 0) + 1;
    const now = Date.now();
    const giveUpAt = Date.parse(row.received_at) + retryWindowMs(this.deps.accounts().get(row.account));
    if (failure.transient && now < giveUpAt) {
      this.failedTries.set(row.message_id, tries);
      const delay = Math.max(backoffMs(this.deps.retry, tries), failure.retryAfterMs ?? 0);
      // The last try is made at the end of the window rather than never.
      const wait = Math.min(now + delay, giveUpAt) - now;
      log.warn('webhook.answer_retry', { try: tries, retry_in_ms: Math.round(wait), error: failure.detail });
      const timer = setTimeout(() => {
        this.retryTimers.delete(row.message_id);
        this.enqueue(row);
      }, wait);
      this.retryTimers.set(row.message_id, timer);
      return false;
    }
    const gaveUp = failure.transient ? `gave up after ${tries} tries: ` : '';
    log.error('webhook.answer_failed', { tries, error: failure.detail });
    await this.sendError(row, { detail: gaveUp + failure.detail, forSender: gaveUp + failure.forSender }, log);
    return true;
  }

  /**
   * A delivery of `body` to the row's account, announced to the outbox (which sends it once the
   * caller's transaction confirms it). The account is read afresh: it may have changed meanwhile.
   */
  private newDelivery(row: InboxRow, body: WebhookOutgoingBody | WebhookErrorBody): NewDelivery {
    const now = Date.now();
    const target = this.deps.accounts().get(row.account);
    const delivery: NewDelivery = {
      id: randomUUID(),
      account: row.account,
      url: target?.outgoing_url ?? row.url,
      body: JSON.stringify(body),
      now,
      give_up_ms: now + retryWindowMs(target),
    };
    this.deps.outbox.expect(delivery.id);
    return delivery;
  }

  /** Marks the row failed (with the detail, for the owner) and queues the signed error callback, in one transaction. */
  private async sendError(row: InboxRow, reason: string | (Pick<TurnFailure, 'detail' | 'forSender'> & { code?: string }), log: Logger): Promise<void> {
    // A user's doing (removed, cancelled) is told to the sender and the owner alike.
    const why = typeof reason === 'string' ? { detail: reason, forSender: reason } : reason;
    const body: WebhookErrorBody = { status: 'error', ...(why.code ? { code: why.code } : {}), error: why.forSender, conversation_id: row.conversation_id, message_id: row.message_id };
    const delivery = this.newDelivery(row, body);
    const deliveryId = delivery.id;
    try {
      await this.deps.store.webhooks.failWithCallback(row.message_id, why.detail, { ...delivery, conversation_id: row.conversation_id });
    } catch (error) {
      log.error('webhook.inbox_write_failed', { error });
      return;
    }
    this.deps.outbox.confirm(deliveryId);
    log.info('webhook.error_callback', { delivery: deliveryId });
  }
}
