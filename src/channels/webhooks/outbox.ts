import http from 'node:http';
import https from 'node:https';
import { ServiceError, type Delivery, type DeliveryStatus, type WebhookAccount } from '../../protocol';
import type { Logger } from '../../log/logger';
import type { AttemptRecord, DeliveryRow, Store } from '../../store';
import type { DeliveryCommands } from '../../commands/context';
import { signatureHeader } from './signature';

/** Delivery timings (docs/protocol.md, "Webhook channel"); tests and the benchmark shorten them. */
export interface OutboxTimings {
  /** An attempt without an answer (status line) in this long has failed. Default 15 s. */
  timeoutMs: number;
  /** Delay before the first retry; it doubles with each failed attempt. Default 1 s. */
  retryBaseMs: number;
  /** Longest backoff between two attempts (a receiver's Retry-After may ask for more). Default 10 min. */
  retryMaxMs: number;
  /** Attempts in flight at once, all accounts together. Default 16. */
  concurrency: number;
  /** Attempts in flight at once for one account, so a hanging receiver cannot take every slot. Default 4. */
  perAccount: number;
}

export const DEFAULT_OUTBOX_TIMINGS: OutboxTimings = {
  timeoutMs: 15_000,
  retryBaseMs: 1_000,
  retryMaxMs: 10 * 60_000,
  concurrency: 16,
  perAccount: 4,
};

/** How long a delivery is retried when its account sets no `retry_for_seconds`. */
export const DEFAULT_RETRY_FOR_MS = 24 * 60 * 60_000;

/** What the WebSocket commands list_deliveries and retry_delivery use. */
export interface OutboxDeps {
  store: Store;
  /** The accounts in force now (service.json may change under us). */
  accounts: () => ReadonlyMap<string, WebhookAccount>;
  logger: Logger;
  timings?: Partial<OutboxTimings>;
  random?: () => number;
}

/** The result of one HTTP attempt; `aborted` when the service stopped it (not counted as an attempt). */
interface PostResult {
  status?: number;
  retryAfterMs?: number;
  error?: string;
  aborted?: boolean;
}

const PAGE = 64;
const MAX_TIMER_MS = 2 ** 31 - 1;
const USER_AGENT = 'remote-assistant-webhook/1';

/**
 * Exponential from retryBaseMs (doubling per failed attempt), up to half again as much jitter, capped at
 * retryMaxMs. Deliveries and the retried turns of webhook messages (webhook-inbox.ts) back off alike.
 */
export function backoffMs(timings: Pick<OutboxTimings, 'retryBaseMs' | 'retryMaxMs'>, failedAttempts: number, random: () => number = Math.random): number {
  const exponential = timings.retryBaseMs * 2 ** Math.min(failedAttempts - 1, 40);
  return Math.min(timings.retryMaxMs, exponential * (1 + random() * 0.5));
}

export function retryWindowMs(account: WebhookAccount | undefined): number {
  return account?.retry_for_seconds !== undefined ? account.retry_for_seconds * 1000 : DEFAULT_RETRY_FOR_MS;
}

/** Seconds or an HTTP date, as ms from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  if (/^\s*\d+\s*$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Only the origin: a path or query of a receiver URL may carry a token. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'invalid URL';
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

export function deliveryInfo(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    account: row.account,
    receiver: originOf(row.url),
    conversation_id: row.conversation_id,
    message_id: row.message_id,
    kind: row.kind,
    status: row.status,
    attempts: row.attempts,
    created_at: row.created_at,
    next_attempt_at: row.next_attempt_ms === null ? null : iso(row.next_attempt_ms),
    give_up_at: iso(row.give_up_ms),
    last_attempt_at: row.last_attempt_at,
    last_status: row.last_status,
    last_error: row.last_error,
    finished_at: row.finished_at,
  };
}

/**
 * The durable outbox's sender. Driven by one timer set to the earliest `next_attempt_ms` of the
 * pending deliveries (no polling), woken early when a delivery is created or retried and when an
 * attempt ends. Attempts run concurrently within bounds; each outcome is written (durably) before the
 * next attempt of that delivery is planned. Delivery is at least once: a crash after the receiver's 2xx
 * but before it is recorded sends it again after restart, with the same `webhook-id`.
 */
export class WebhookOutbox implements DeliveryCommands {
  private readonly timings: OutboxTimings;
  private readonly random: () => number;
  private readonly log: Logger;
  /** Deliveries being handled: from launch until their attempt's outcome is durable. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** HTTP exchanges under way (what the concurrency bounds count; writing the outcome holds no slot). */
  private sending = 0;
  /**
   * Deliveries whose transaction is written in memory but not yet durable: sql.js applies a write at
   * once and the journal makes it durable later, so the pump could see a row a crash would take back.
   * Sending it would let the reply be made again after restart under another webhook-id.
   */
  private readonly unconfirmed = new Set<string>();
  private readonly perAccount = new Map<string, number>();
  private readonly stopping = new AbortController();
  private readonly agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;
  private kickQueued = false;
  private started = false;
  private stopped = false;

  constructor(private readonly deps: OutboxDeps) {
    this.timings = { ...DEFAULT_OUTBOX_TIMINGS, ...deps.timings };
    this.random = deps.random ?? Math.random;
    this.log = deps.logger.child({ component: 'webhook' });
  }

  /** Starts sending (pending deliveries of an earlier run included). */
  start(): void {
    if (this.started) return;
    this.started = true;
    const pending = this.deps.store.webhooks.countDeliveries('pending');
    if (pending > 0) this.log.info('webhook.outbox_resumed', { pending });
    this.kick();
  }

  /** Call before writing a delivery (new or retried): it is not sent until confirm(). */
  expect(deliveryId: string): void {
    this.unconfirmed.add(deliveryId);
  }

  /** The delivery's transaction is durable: it may be sent. (After a failed write, do not confirm.) */
  confirm(deliveryId: string): void {
    this.unconfirmed.delete(deliveryId);
    this.kick();
  }

  /** Looks for due deliveries soon (coalesced). */
  kick(): void {
    if (!this.started || this.stopped || this.kickQueued) return;
    this.kickQueued = true;
    setImmediate(() => {
      this.kickQueued = false;
      this.pump();
    });
  }

  /**
   * No new attempts; waits for those in flight (their outcome is recorded), aborting them after `graceMs`
   * (an aborted attempt stays pending and is made again after restart).
   */
  async stop(graceMs = Math.min(this.timings.timeoutMs, 5_000)): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inFlight.size > 0) {
      const abort = setTimeout(() => this.stopping.abort(), graceMs);
      await Promise.allSettled([...this.inFlight.values()]);
      clearTimeout(abort);
    }
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  list(filter: { account?: string; status?: DeliveryStatus; limit: number }): Delivery[] {
    return this.deps.store.webhooks.listDeliveries(filter).map(deliveryInfo);
  }

  async retry(deliveryId: string): Promise<Delivery> {
    const row = this.deps.store.webhooks.getDelivery(deliveryId);
    if (!row) throw new ServiceError('not_found', `delivery ${deliveryId} not found`);
    if (row.status === 'delivered') throw new ServiceError('invalid_request', `delivery ${deliveryId} was already delivered`);
    const now = Date.now();
    this.expect(deliveryId);
    const updated = await this.deps.store.webhooks.retryDelivery(deliveryId, now, now + retryWindowMs(this.deps.accounts().get(row.account)));
    this.confirm(deliveryId);
    if (!updated) throw new ServiceError('not_found', `delivery ${deliveryId} not found`);
    this.log.info('webhook.delivery_retry_requested', { delivery: deliveryId, account: row.account, was: row.status });
    return deliveryInfo(updated);
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** Starts every due delivery there is room for, then sets the timer for the next future one. */
  private pump(): void {
    if (this.stopped) return;
    const now = Date.now();
    let full = this.sending >= this.timings.concurrency;
    for (let offset = 0; !full; offset += PAGE) {
      const rows = this.deps.store.webhooks.dueDeliveries(now, PAGE, offset);
      for (const row of rows) {
        if (this.inFlight.has(row.id) || this.unconfirmed.has(row.id)) continue;
        if ((this.perAccount.get(row.account) ?? 0) >= this.timings.perAccount) continue;
        this.launch(row);
        full = this.sending >= this.timings.concurrency;
        if (full) break;
      }
      if (rows.length < PAGE) break;
    }
    // Due rows left waiting for a slot are started when an attempt ends (it kicks); the timer is for later ones.
    const next = this.deps.store.webhooks.nextAttemptAfter(now);
    if (next === undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.timerAt = Infinity;
    } else if (next !== this.timerAt || !this.timer) {
      clearTimeout(this.timer);
      this.timerAt = next;
      this.timer = setTimeout(
        () => {
          this.timer = undefined;
          this.timerAt = Infinity;
          this.pump();
        },
        Math.min(Math.max(0, next - Date.now()), MAX_TIMER_MS),
      );
      this.timer.unref();
    }
  }

  private launch(due: { id: string; account: string }): void {
    const row = this.deps.store.webhooks.getDelivery(due.id);
    if (!row || row.status !== 'pending') return;
    this.sending += 1;
    this.perAccount.set(row.account, (this.perAccount.get(row.account) ?? 0) + 1);
    let slotHeld = true;
    const freeSlot = () => {
      if (!slotHeld) return;
      slotHeld = false;
      this.sending -= 1;
      const left = (this.perAccount.get(row.account) ?? 1) - 1;
      if (left > 0) this.perAccount.set(row.account, left);
      else this.perAccount.delete(row.account);
      this.kick();
    };
    const work = this.attempt(row, freeSlot)
      .catch((error) => this.log.error('webhook.delivery_attempt_crashed', { delivery: row.id, error }))
      .finally(() => {
        freeSlot();
        this.inFlight.delete(row.id);
        this.kick();
      });
    this.inFlight.set(row.id, work);
  }

  private async attempt(row: DeliveryRow, sent: () => void): Promise<void> {
    const account = this.deps.accounts().get(row.account);
    // A changed outgoing_url applies to pending deliveries; a removed account's go to the stored URL, unsigned.
    const url = account?.outgoing_url ?? row.url;
    const secret = account?.secret;
    const attemptNo = row.attempts + 1;
    if (!account) this.log.warn('webhook.delivery_account_removed', { delivery: row.id, account: row.account, url, note: 'sent to the stored URL without secret or signature' });
    let body: string | undefined;
    let unreadable: string | undefined;
    try {
      body = await this.deps.store.webhooks.deliveryBody(row);
    } catch (error) {
      // history.db did not answer (its worker failing): an attempt that failed, tried again after its backoff.
      unreadable = `its body could not be read from the history file (${error instanceof Error ? error.message : String(error)})`;
    }
    if (body === undefined && unreadable === undefined) {
      const error = 'its body is missing from the history file (damaged): it cannot be sent';
      await this.record(row.id, { status: 'failed', url, http_status: null, error, next_attempt_ms: null, now: Date.now() });
      this.log.error('webhook.delivery_failed', { delivery: row.id, account: row.account, error });
      return;
    }
    const started = Date.now();
    const result: PostResult = body === undefined ? { error: unreadable } : await this.send(row.id, url, secret, body);
    sent();
    if (result.aborted) {
      this.log.info('webhook.delivery_interrupted', { delivery: row.id, account: row.account, attempt: attemptNo, note: 'service stopping; sent again after restart' });
      return;
    }
    const now = Date.now();
    const ms = now - started;
    const fields = { delivery: row.id, account: row.account, url, attempt: attemptNo, ms, status: result.status, error: result.error };
    if (result.status !== undefined && result.status >= 200 && result.status < 300) {
      await this.record(row.id, { status: 'delivered', url, http_status: result.status, error: null, next_attempt_ms: null, now });
      this.log.info('webhook.delivered', fields);
      return;
    }
    const error = result.error ?? `HTTP ${result.status}`;
    if (result.status === 410) {
      await this.record(row.id, { status: 'failed', url, http_status: 410, error: 'receiver answered 410 Gone: not retried', next_attempt_ms: null, now });
      this.log.warn('webhook.delivery_gone', fields);
      return;
    }
    if (now >= row.give_up_ms) {
      const message = `gave up after ${attemptNo} attempts: ${error}`;
      await this.record(row.id, { status: 'failed', url, http_status: result.status ?? null, error: message, next_attempt_ms: null, now });
      this.log.error('webhook.delivery_failed', { ...fields, note: 'retry window over; retry_delivery sends it again' });
      return;
    }
    const delay = Math.max(backoffMs(this.timings, row.round_attempts + 1, this.random), result.retryAfterMs ?? 0);
    // The last try is made at the end of the window rather than never.
    const next = Math.min(now + delay, row.give_up_ms);
    await this.record(row.id, { status: 'pending', url, http_status: result.status ?? null, error, next_attempt_ms: next, now });
    this.log.warn('webhook.delivery_retry', { ...fields, retry_in_ms: next - now });
  }

  /** One HTTP attempt of a delivery: its body signed with the account's secret (none: unsigned). */
  private send(id: string, url: string, secret: string | undefined, body: string): Promise<PostResult> {
    const timestamp = Math.floor(Date.now() / 1000);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
    };
    if (secret) {
      headers['webhook-signature'] = signatureHeader(secret, id, timestamp, body);
      headers['x-service-secret'] = secret;
    }
    return this.post(url, body, headers);
  }

  private async record(id: string, attempt: AttemptRecord): Promise<void> {
    await this.deps.store.webhooks.recordAttempt(id, attempt);
  }

  private async post(url: string, body: string, headers: Record<string, string>): Promise<PostResult> {
    const first = await this.postOnce(url, body, headers);
    // A kept-alive connection the receiver closed just as we reused it: not the receiver's answer.
    return first.staleSocket ? this.postOnce(url, body, headers) : first;
  }

  private postOnce(url: string, body: string, headers: Record<string, string>): Promise<PostResult & { staleSocket?: boolean }> {
    return new Promise((resolve) => {
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        return resolve({ error: 'invalid URL' });
      }
      const secure = target.protocol === 'https:';
      if (!secure && target.protocol !== 'http:') return resolve({ error: `unsupported protocol ${target.protocol}` });
      let settled = false;
      const finish = (result: PostResult & { staleSocket?: boolean }) => {
        if (settled) return;
        settled = true;
        resolve(result);
      };
      const signal = this.stopping.signal;
      if (signal.aborted) return finish({ aborted: true });
      const req = (secure ? https : http).request(target, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: secure ? this.agents.https : this.agents.http,
      });
      const cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      const timer = setTimeout(() => {
        finish({ error: `no answer within ${Math.round(this.timings.timeoutMs / 100) / 10} s` });
        cleanup();
        req.destroy();
      }, this.timings.timeoutMs);
      const onAbort = () => {
        finish({ aborted: true });
        cleanup();
        req.destroy();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      req.on('response', (res) => {
        finish({ status: res.statusCode ?? 0, retryAfterMs: parseRetryAfter(res.headers['retry-after']) });
        // The body is not needed, but is read so the connection can be reused; the timer still bounds it.
        res.on('error', () => undefined);
        res.on('close', () => {
          cleanup();
          if (!res.complete) req.destroy();
        });
        res.resume();
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        cleanup();
        const stale = req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
        finish(stale ? { staleSocket: true } : { error: error.message || error.code || 'request failed' });
      });
      req.end(body);
    });
  }
}
