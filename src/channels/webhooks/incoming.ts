import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { titleOf } from '../../agent/agent';
import { IncompleteBody, ServiceError, WebhookIncomingBody, ok, parseOrThrow, type WebhookAccount } from '../../protocol';
import { BurstLog } from '../../log/burst-log';
import type { Logger } from '../../log/logger';
import type { InboxRow, Store } from '../../store';
import { clientAddress, MAX_BODY_BYTES, sendEnvelope } from '../../transport/http/http-util';
import { FixedWindowLimiter } from '../../transport/http/rate-limit';
import { loginLimitKey } from '../../transport/http/allow-from';
import { sourceText } from '../../protocol/sources';
import { budgetRefusal } from './budget';
import { secretsEqual, signatureValid, signedHeadersOf, timestampFresh, type SignedHeaders } from './signature';

export const WEBHOOK_RATE_LIMIT_PER_MINUTE = 120;
/**
 * Signed requests of one account whose body is being read before its signature can be checked, at most
 * this many at once whatever their addresses (each up to maxBodyBytes held): many addresses, each under
 * its own limit of wrong signatures, cannot have the service hold and hash bodies without bound.
 */
export const MAX_UNVERIFIED_READS = 64;
/**
 * ...and at most this many of one client address (an IPv6 one by its /64): a sender holding bodies back
 * (a slow upload takes no secret) cannot take the account's reads from its real sender alone.
 */
export const MAX_UNVERIFIED_READS_PER_ADDRESS = 4;
/** A signed body not all sent within this is dropped (its read given back): held reads cost their holder. */
export const UNVERIFIED_READ_MS = 10_000;
/** The log says a burst of wrong credentials once per this window, account and address, then one counted line. */
export const WEBHOOK_FAILURE_LOG_WINDOW_MS = 60_000;

const tooManyFailures = (wait: number) => new ServiceError('rate_limited', 'too many requests with a wrong secret or signature from this address', wait);
/** How long an Idempotency-Key's first answer is kept (docs/protocol.md). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60_000;
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

export interface IncomingOptions {
  rateLimitPerMinute?: number;
  maxBodyBytes?: number;
  maxUnverifiedReads?: number;
  maxUnverifiedReadsPerAddress?: number;
  unverifiedReadMs?: number;
}

export interface IncomingDeps {
  store: Store;
  logger: Logger;
  /** Called with the inbox row of each newly stored message. */
  onAccepted: (row: InboxRow) => void;
}

/**
 * `POST <incoming_path>` of one account. Checks, cheapest first: the credential headers (401, before the
 * body is read when they can decide), the account's rate (429), Content-Type (400), size (413), the
 * Standard Webhooks signature over the raw body (401), JSON and field types (400), the conversation
 * (404). Then the message is stored in one durable transaction and answered 202; the agent runs after.
 * Only requests with the account's credential count against its rate (an account without a secret:
 * every request): anyone who knows the path could otherwise use up its sender's minute. Requests with a
 * wrong secret or signature count per address instead, and past the same limit are refused 429. A
 * signed request is counted as a failure before its body is read (refunded once its signature holds),
 * so parallel forgeries cannot all be read and hashed, and at most MAX_UNVERIFIED_READS of an account
 * are read at once. Wrong credentials are logged as counted bursts (BurstLog), not a line each.
 */
export class IncomingWebhooks {
  private readonly limiter: FixedWindowLimiter;
  /** Requests with a wrong credential, per account and client address. */
  private readonly failures: FixedWindowLimiter;
  /** Signed bodies cut short, forgiven (not counted as failures) up to the same limit a minute per account and address. */
  private readonly cutsForgiven: FixedWindowLimiter;
  private readonly limit: number;
  private readonly maxBodyBytes: number;
  private readonly maxUnverifiedReads: number;
  private readonly maxUnverifiedReadsPerAddress: number;
  private readonly unverifiedReadMs: number;
  /** Signed bodies being read now, per account and per account and address (failureKeyOf). */
  private readonly unverifiedReads = new Map<string, number>();
  private readonly log: Logger;
  private readonly bursts: BurstLog<{ address: string; account: string }>;
  /** Refusals already in the burst log: handle() does not log them again. */
  private readonly counted = new WeakSet<ServiceError>();

  constructor(
    private readonly deps: IncomingDeps,
    options: IncomingOptions = {},
  ) {
    this.limit = options.rateLimitPerMinute ?? WEBHOOK_RATE_LIMIT_PER_MINUTE;
    this.maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
    this.limiter = new FixedWindowLimiter(this.limit, 60_000);
    this.failures = new FixedWindowLimiter(this.limit, 60_000);
    this.cutsForgiven = new FixedWindowLimiter(this.limit, 60_000);
    this.maxUnverifiedReads = options.maxUnverifiedReads ?? MAX_UNVERIFIED_READS;
    this.maxUnverifiedReadsPerAddress = options.maxUnverifiedReadsPerAddress ?? MAX_UNVERIFIED_READS_PER_ADDRESS;
    this.unverifiedReadMs = options.unverifiedReadMs ?? UNVERIFIED_READ_MS;
    this.log = deps.logger.child({ component: 'webhook' });
    this.bursts = new BurstLog(
      this.log,
      { first: 'webhook.refused', burst: 'webhook.refused_burst', message: (b) => `${b.count} requests with a wrong credential to ${b.account} from ${b.address} in ${b.window_seconds} s` },
      Date.now,
      WEBHOOK_FAILURE_LOG_WINDOW_MS,
    );
  }

  /** Logs the open bursts' counts now (the service stops). */
  flush(): void {
    this.bursts.flush();
  }

  async handle(req: IncomingMessage, res: ServerResponse, name: string, account: WebhookAccount): Promise<void> {
    const started = Date.now();
    try {
      await this.accept(req, res, name, account, started);
    } catch (error) {
      if (error instanceof ServiceError) {
        req.resume();
        // A wrong credential is in the burst log; a cut body in the server's (http.body_incomplete).
        if (this.counted.has(error) || error instanceof IncompleteBody) throw error;
        const fields = { account: name, code: error.code, reason: error.message, address: clientAddress(req) };
        if (error.code === 'rate_limited') this.log.debug('webhook.refused', fields);
        else this.log.info('webhook.refused', fields);
      }
      throw error;
    }
  }

  private async accept(req: IncomingMessage, res: ServerResponse, name: string, account: WebhookAccount, started: number): Promise<void> {
    const from = { account: name, address: loginLimitKey(clientAddress(req)) };
    const signed = this.checkHeaderCredentials(req, account, from);
    let raw: Buffer;
    if (signed) raw = await this.readSigned(req, account.secret!, signed, from);
    else {
      this.countRequest(name);
      this.checkBodyHeaders(req);
      raw = await this.readBody(req);
    }

    let value: unknown;
    try {
      value = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new ServiceError('invalid_request', 'body is not valid JSON');
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ServiceError('invalid_request', 'body must be a JSON object');
    const body = parseOrThrow(WebhookIncomingBody, value, 'webhook body');
    const idempotencyKey = this.idempotencyKeyOf(req, signed);

    const now = Date.now();
    const result = await this.deps.store.webhooks.accept({
      account: name,
      source: sourceText({ kind: 'webhook', account: name }),
      url: account.outgoing_url,
      conversationId: body.conversation_id,
      newConversation: { id: randomUUID(), title: titleOf(body.message) },
      message: { id: randomUUID(), content: body.message, user_id: body.user_id },
      idempotencyKey,
      now,
      idempotencyMs: IDEMPOTENCY_WINDOW_MS,
    });
    if (result.kind === 'not_found') throw new ServiceError('not_found', `conversation ${body.conversation_id} not found`);
    if (result.kind === 'accepted') this.deps.onAccepted(result.inbox);
    this.log.info('webhook.received', {
      account: name,
      conversation: result.conversation_id,
      message: result.message_id,
      bytes: raw.length,
      ms: Date.now() - started,
      ...(result.kind === 'duplicate' ? { duplicate: true } : {}),
    });
    // Accepted all the same (its error callback tells the sender too), but a sender reading the answer knows at once.
    const overBudget = result.kind === 'accepted' ? budgetRefusal(this.deps.store, name, account) : undefined;
    sendEnvelope(res, ok({ conversation_id: result.conversation_id, message_id: result.message_id, ...(overBudget ? { budget_exceeded: overBudget } : {}) }), 202);
  }

  /**
   * With a secret: `X-Service-Secret` decides when present; else the three Standard Webhooks headers must
   * be there with a fresh timestamp (the signature is checked once the body is read). Returns them then.
   */
  private checkHeaderCredentials(req: IncomingMessage, account: WebhookAccount, from: From): SignedHeaders | undefined {
    if (!account.secret) return undefined;
    const plain = req.headers['x-service-secret'];
    if (plain !== undefined) {
      if (typeof plain !== 'string' || !secretsEqual(plain, account.secret)) throw this.refused(from, 'invalid X-Service-Secret');
      return undefined;
    }
    const signed = signedHeadersOf(req.headers);
    if (!signed) throw this.refused(from, 'missing X-Service-Secret (or webhook-id, webhook-timestamp and webhook-signature)');
    if (!timestampFresh(signed.timestamp, Date.now())) throw this.refused(from, 'webhook-timestamp is not within 5 minutes of now');
    return signed;
  }

  /**
   * A signed request's body, once its signature holds. Counted as a wrong one before the body is read
   * (synchronously, so parallel forgeries from one address cannot all slip under its limit) and refunded
   * when the signature is good, nothing was read, or the connection closed before the body's end (a
   * network's cut, no guess at the secret; the limit's worth a minute of an address); at most maxUnverifiedReads of the account and
   * maxUnverifiedReadsPerAddress of one address read at once, each within unverifiedReadMs.
   */
  private async readSigned(req: IncomingMessage, secret: string, signed: SignedHeaders, from: From): Promise<Buffer> {
    const keys = [from.account, failureKeyOf(from)];
    if ((this.unverifiedReads.get(keys[0]!) ?? 0) >= this.maxUnverifiedReads) {
      throw new ServiceError('rate_limited', `too many signed requests being read at once for this webhook (at most ${this.maxUnverifiedReads})`, 1);
    }
    if ((this.unverifiedReads.get(keys[1]!) ?? 0) >= this.maxUnverifiedReadsPerAddress) {
      throw new ServiceError('rate_limited', `too many signed requests from this address being read at once (at most ${this.maxUnverifiedReadsPerAddress})`, 1);
    }
    const attempt = this.failures.reserve(failureKeyOf(from));
    if (attempt.retryAfterSeconds > 0) throw this.counting(tooManyFailures(attempt.retryAfterSeconds), from, true);
    let raw: Buffer;
    try {
      this.checkBodyHeaders(req);
    } catch (error) {
      attempt.refund();
      throw error;
    }
    for (const key of keys) this.unverifiedReads.set(key, (this.unverifiedReads.get(key) ?? 0) + 1);
    // Node's own request timeout (60 s, checked every 30) would let a held body keep its read that long.
    const deadline = setTimeout(() => req.destroy(new ServiceError('rate_limited', 'the signed body was not sent in time', 1)), this.unverifiedReadMs);
    try {
      raw = await this.readBody(req);
    } catch (error) {
      // A body the network cut short was never a guess at the secret: the sender is not locked out by it;
      // but each was a read, so only the limit's worth a minute is forgiven (more is no network's doing:
      // counted, not refunded). Logged once either way, by the server's cut-body log (body-incomplete-log.ts).
      if (error instanceof IncompleteBody && this.cutsForgiven.hit(failureKeyOf(from)) === 0) attempt.refund();
      throw error;
    } finally {
      clearTimeout(deadline);
      for (const key of keys) {
        const left = this.unverifiedReads.get(key)! - 1;
        if (left > 0) this.unverifiedReads.set(key, left);
        else this.unverifiedReads.delete(key);
      }
    }
    if (!signatureValid(secret, signed, raw)) throw this.counting(new ServiceError('invalid_token', 'invalid webhook signature'), from, false);
    attempt.refund();
    this.countRequest(from.account);
    return raw;
  }

  /** A request with the account's credential (or to an account without one): counted against the account's minute. */
  private countRequest(name: string): void {
    const wait = this.limiter.hit(name);
    if (wait > 0) throw new ServiceError('rate_limited', `too many requests: at most ${this.limit} a minute for this webhook`, wait);
  }

  /** A wrong credential: counted against its address (not the account), refused 401, or 429 once past the limit. */
  private refused(from: From, why: string): ServiceError {
    const wait = this.failures.hit(failureKeyOf(from));
    return wait > 0 ? this.counting(tooManyFailures(wait), from, true) : this.counting(new ServiceError('invalid_token', why), from, false);
  }

  /** Puts a wrong credential's refusal in the burst log (`refused`: turned away unchecked, over the limit). */
  private counting(error: ServiceError, from: From, refused: boolean): ServiceError {
    this.bursts.record(from, refused, { reason: error.message });
    this.counted.add(error);
    return error;
  }

  /**
   * A signed request's `webhook-id` (Standard Webhooks senders keep it across retries), else
   * `Idempotency-Key`. The id is what the signature covers: an `Idempotency-Key` beside it is outside the
   * signature, so whoever replays a captured request within its 5 minutes could write one to have it run
   * again; it is checked for its form and otherwise not used.
   */
  private idempotencyKeyOf(req: IncomingMessage, signed: SignedHeaders | undefined): string | undefined {
    const header = req.headers['idempotency-key'];
    if (header === undefined) return signed ? `webhook-id:${signed.id}` : undefined;
    const key = typeof header === 'string' ? header.trim() : '';
    if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
      throw new ServiceError('invalid_request', `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`);
    }
    return signed ? `webhook-id:${signed.id}` : `key:${key}`;
  }

  /** Before reading: the body must be application/json and not declared over maxBodyBytes. */
  private checkBodyHeaders(req: IncomingMessage): void {
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') throw new ServiceError('invalid_request', 'Content-Type must be application/json');
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > this.maxBodyBytes) throw this.tooLarge();
  }

  private tooLarge(): ServiceError {
    return new ServiceError('payload_too_large', `body exceeds ${this.maxBodyBytes} bytes`);
  }

  /** The raw body, refused as soon as it passes maxBodyBytes. */
  private async readBody(req: IncomingMessage): Promise<Buffer> {
    // Events rather than `for await`, which would destroy the socket on an early exit: the client gets
    // its 413 (the rest of the body is drained by handle()).
    return new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => {
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('error', onError);
        req.on('error', () => undefined);
      };
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        if (size <= this.maxBodyBytes) return void chunks.push(chunk);
        done();
        reject(this.tooLarge());
      };
      const onEnd = () => {
        done();
        resolve(Buffer.concat(chunks));
      };
      const onError = (error: Error) => {
        done();
        // Node's "aborted": the connection closed before the body's end (a deadline's own error passes).
        reject(error instanceof ServiceError ? error : new IncompleteBody());
      };
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('error', onError);
    });
  }
}

/** Whom a wrong credential is counted against: the account and the client's address (an IPv6 one by its /64). */
interface From {
  account: string;
  address: string;
}

function failureKeyOf(from: From): string {
  return `${from.account} ${from.address}`;
}
