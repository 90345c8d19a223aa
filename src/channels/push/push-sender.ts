import https from 'node:https';
import type { RequestDetails } from 'web-push';
import { webPush } from './web-push-lib';
import type { VapidKeys } from './vapid-keys';
import type { PushPayload } from '../../protocol/push-payload';

/** One notification as the push service carries it. */
export interface PushMessage {
  /** The JSON the service worker reads (docs/protocol.md, "Web Push"); encrypted to the subscription. */
  payload: PushPayload;
  /** Seconds the push service keeps it for a device that is offline. */
  ttl: number;
  urgency: 'high' | 'normal';
  /** Replaces a message of the same topic the push service still holds (a withdrawn prompt). */
  topic: string;
}

export interface PushTarget {
  endpoint: string;
  p256dh: string;
  auth: string;
}

export interface DeliveryOutcome {
  ok: boolean;
  /** The push service's HTTP status; null when it did not answer. */
  status: number | null;
  /** Why it failed, for the owner: the status or the network error's code (never the endpoint: a capability). */
  error?: string;
  /** The subscription is gone for good (404/410): the device's subscription is dropped. */
  gone: boolean;
}

export interface PushSenderOptions {
  /** HTTPS agent: tests trust their fake push service's certificate through it. Default: guarded (no private addresses). */
  agent?: https.Agent;
  /** First wait before trying again after a 429/5xx/network failure; doubles each time. Default 1 s. */
  retryBaseMs?: number;
  /** Tries in all for a transient failure. Default 3. */
  tries?: number;
  /** Per try. Default 10 s. */
  timeoutMs?: number;
}

/** The longest Retry-After honoured: a push is worth little minutes late. */
const MAX_RETRY_AFTER_MS = 30_000;

function retryAfterMs(error: unknown): number {
  if (!(error instanceof webPush().WebPushError)) return 0;
  const value = Number(error.headers?.['retry-after']);
  return Number.isFinite(value) && value > 0 ? Math.min(value * 1000, MAX_RETRY_AFTER_MS) : 0;
}

function outcomeOf(error: unknown): DeliveryOutcome {
  if (error instanceof webPush().WebPushError) {
    const status = error.statusCode;
    return { ok: false, status, error: `the push service answered HTTP ${status}`, gone: status === 404 || status === 410 };
  }
  const code = (error as NodeJS.ErrnoException)?.code;
  const why = code === 'EPRIVATEADDRESS' ? 'the push endpoint resolves to a private address' : `could not reach the push service${code ? ` (${code})` : ''}`;
  return { ok: false, status: null, error: why, gone: false };
}

/** 429, 5xx and no answer may pass; any other refusal will not (a bad JWT, a payload too large). */
function transient(outcome: DeliveryOutcome): boolean {
  return outcome.status === null || outcome.status === 429 || outcome.status >= 500;
}

/**
 * Sends one Web Push message with `web-push` (RFC 8291 aes128gcm encryption, RFC 8292 VAPID JWT), trying
 * again a few times with backoff after a transient failure.
 */
export class PushSender {
  constructor(
    private readonly keys: () => Promise<VapidKeys>,
    private readonly agent: https.Agent,
    private readonly options: Omit<PushSenderOptions, 'agent'> = {},
  ) {}

  async deliver(target: PushTarget, message: PushMessage): Promise<DeliveryOutcome> {
    const tries = this.options.tries ?? 3;
    const base = this.options.retryBaseMs ?? 1000;
    for (let attempt = 1; ; attempt++) {
      let outcome: DeliveryOutcome;
      let wait = 0;
      try {
        const sent = await this.once(target, message);
        return { ok: true, status: sent, gone: false };
      } catch (error) {
        outcome = outcomeOf(error);
        wait = Math.max(base * 2 ** (attempt - 1), retryAfterMs(error));
      }
      if (!transient(outcome) || attempt >= tries) return outcome;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  private async once(target: PushTarget, message: PushMessage): Promise<number> {
    const vapid = await this.keys();
    const details = webPush().generateRequestDetails({ endpoint: target.endpoint, keys: { p256dh: target.p256dh, auth: target.auth } }, JSON.stringify(message.payload), {
      vapidDetails: { subject: vapid.subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
      TTL: Math.max(0, Math.round(message.ttl)),
      urgency: message.urgency,
      topic: message.topic,
      contentEncoding: 'aes128gcm',
    });
    return post(details, this.agent, this.options.timeoutMs ?? 10_000);
  }
}

/** Bytes of a push service's answer read at most: its status is all the service uses. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Sends what web-push prepared, as its sendNotification would, but bounded: the endpoint may be anyone's
 * (a client subscribes it), and sendNotification buffered the whole answer before settling (an endless
 * body filled the memory) and timed out only an idle socket. Here the status settles the push at once;
 * at most MAX_ANSWER_BYTES of the body are read and the whole exchange has a deadline, then the
 * connection is let go. The URL is read with WHATWG URL, as the endpoint was checked.
 */
function post(details: RequestDetails, agent: https.Agent, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = https.request(new URL(details.endpoint), { method: details.method, headers: details.headers, agent }, (response) => {
      const status = response.statusCode ?? 0;
      if (status >= 200 && status <= 299) resolve(status);
      else reject(new (webPush().WebPushError)('Received unexpected response code', status, response.headers, '', details.endpoint));
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) request.destroy();
      });
      response.on('error', () => undefined);
    });
    const deadline = setTimeout(() => request.destroy(Object.assign(new Error('the push service took too long'), { code: 'ETIMEDOUT' })), timeoutMs);
    request.on('close', () => clearTimeout(deadline));
    request.on('error', reject);
    request.end(details.body ?? undefined);
  });
}
