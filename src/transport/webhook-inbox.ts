import { randomUUID } from 'node:crypto';
import type { Agent } from '../agent/agent';
import type { RunningChats } from '../commands/running-chats';
import { ServiceError, type WebhookAccount, type WebhookOutgoingBody } from '../protocol';
import type { Logger } from '../log/logger';
import type { InboxRow, Store } from '../store';
import { retryWindowMs } from './webhook-outbox';
import { webhookSource } from './webhook-trust';

export interface InboxDeps {
  store: Store;
  agent: Agent;
  /** Webhook runs are registered here, so a stop past its grace period cancels them like any chat. */
  running: RunningChats;
  accounts: () => ReadonlyMap<string, WebhookAccount>;
  logger: Logger;
  /** Told of each delivery before its transaction, and again once it is durable (then it may be sent). */
  outbox: { expect(deliveryId: string): void; confirm(deliveryId: string): void };
  /** Agent runs in progress at once for all webhook accounts. Default 32. */
  concurrency?: number;
}

/**
 * Answers accepted webhook messages. The inbox row is the work item: the agent answers the stored
 * user message, and the reply, the row's `answered` mark and the outgoing delivery are written in one
 * transaction. A row still pending after a crash or a stop is answered when the service starts again.
 * Messages of one conversation are answered in arrival order (the agent serializes per conversation, and
 * rows are handed to it in order).
 */
export class WebhookInbox {
  private readonly log: Logger;
  private readonly limit: number;
  private readonly queued = new Set<string>();
  private readonly waiting: (() => void)[] = [];
  private active = 0;
  private stopped = false;

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

  /** No new runs start; rows not started stay pending in the database. Runs in progress finish (the agent's). */
  stop(): void {
    this.stopped = true;
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
      await this.answer(row);
    } catch (error) {
      this.log.error('webhook.inbox_crashed', { message: row.message_id, error });
    } finally {
      this.release();
    }
  }

  private async answer(row: InboxRow): Promise<void> {
    const { store, agent } = this.deps;
    const log = this.log.child({ account: row.account, conversation: row.conversation_id, message: row.message_id });
    const current = store.webhooks.getInbox(row.message_id);
    if (!current || current.status !== 'pending') return;
    if (!store.conversations.get(row.conversation_id)) {
      await store.webhooks.failInbox(row.message_id, 'conversation deleted before it was answered');
      log.warn('webhook.answer_skipped', { reason: 'conversation deleted' });
      return;
    }
    const account = this.deps.accounts().get(row.account);
    if (!account) log.warn('webhook.account_removed', { note: 'answering a message accepted before its account was removed' });
    const source = webhookSource(row.account);
    const run = this.deps.running.start(source, row.message_id);
    let deliveryId = '';
    try {
      const result = await agent.answerAdmitted(row.conversation_id, () => store.webhooks.admit(row.message_id), {
        source,
        model: account?.model,
        signal: run.signal,
        storeReply: async (reply) => {
          // Read afresh: the account may have changed while the agent ran.
          const now = Date.now();
          const target = this.deps.accounts().get(row.account);
          const body: WebhookOutgoingBody = { message: reply.content, conversation_id: reply.conversation_id };
          deliveryId = randomUUID();
          this.deps.outbox.expect(deliveryId);
          await store.webhooks.answer(row.message_id, reply, {
            id: deliveryId,
            account: row.account,
            url: target?.outgoing_url ?? row.url,
            body: JSON.stringify(body),
            now,
            give_up_ms: now + retryWindowMs(target),
          });
          this.deps.outbox.confirm(deliveryId);
        },
      });
      if (result.cancelled) {
        log.info('webhook.answer_interrupted', { note: 'still pending; answered after restart' });
        return;
      }
      log.info('webhook.answered', { delivery: deliveryId });
    } catch (error) {
      // Stopping (the store closing under a run): leave the row pending for the next start.
      if (this.stopped) {
        log.warn('webhook.answer_interrupted', { error });
        return;
      }
      const message = error instanceof ServiceError ? error.message : 'internal error';
      log.error('webhook.answer_failed', { error });
      await store.webhooks.failInbox(row.message_id, message).catch((e) => log.error('webhook.inbox_write_failed', { error: e }));
    } finally {
      run.done();
    }
  }
}
