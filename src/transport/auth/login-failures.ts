import { BurstLog, MAX_LOGGED_ADDRESSES, type Burst } from '../../log/burst-log';
import type { Logger } from '../../log/logger';
import { loginLimitKey } from '../http/allow-from';
import { FixedWindowLimiter, MAX_LIMITED_KEYS } from '../http/rate-limit';

/**
 * What a failed login offered: a password (`POST /auth`), a token or a pairing secret (a WebSocket's
 * `auth`), a relayed client's key or hello that the machine refused (`client_key`), or nothing in time
 * (`timeout`: logged the same way, but not counted against the limit).
 */
export type LoginKind = 'password' | 'token' | 'pairing_secret' | 'client_key' | 'timeout';

/** docs/protocol.md: 10 failed logins per client address per 5 minutes, whatever the door (`POST /auth` or `auth`). */
export const LOGIN_FAILURE_LIMIT = 10;
export const LOGIN_WINDOW_MS = 5 * 60 * 1000;
/**
 * Failed logins of one address across all its browser-origin buckets (browser-origins.ts) per window:
 * a script can send any `Origin`, and each bucket alone would let it try LOGIN_FAILURE_LIMIT more.
 */
export const WEB_FAILURE_LIMIT = 3 * LOGIN_FAILURE_LIMIT;

/**
 * What an attempt counts against: a client address (or a relay's key), or a browser socket's bucket
 * (`web ...`, browser-origins.ts) within its address's total of WEB_FAILURE_LIMIT.
 */
export type LimitAddress = string | { bucket: string; address: string };
/** The log says a burst once per this window and address: its first failure, then one counted line. */
export const LOGIN_LOG_WINDOW_MS = 60 * 1000;
export { MAX_LOGGED_ADDRESSES };

/** One log window's failed logins of one kind from one address: what the audit log records as a "login burst". */
export type LoginBurst = Burst<{
  /** The address as counted (an IPv4 address, an IPv6 /64, `relay:...`, `web <address>`, `web <origin> <address>`, or `other addresses`). */
  address: string;
  kind: LoginKind;
}>;

/** An attempt counted before its credential is checked (so a parallel burst cannot all be checked). */
export interface LoginAttempt {
  /** Over the limit: refuse it without checking anything (it is logged as a failure). 0: go on and check. */
  readonly retryAfterSeconds: number;
  /** The credential was good (or could not be checked): the attempt does not count. */
  refund(): void;
  /** The credential was wrong; `fields` go on the log line if this failure is the one logged. */
  failed(fields?: Record<string, unknown>): void;
}

/**
 * The one home of "failed logins per address", for every door that checks a credential: counts them
 * against the limit (refused without any hashing once over it), and logs them without letting a burst
 * overwrite the log: the first failure of an address in a window is a line, the rest are one counted
 * line when the window ends (`auth.login_burst`), also handed to onBurst listeners.
 */
export class LoginFailures {
  private readonly limiter: FixedWindowLimiter;
  /** Failures of browser buckets, per address they came from (WEB_FAILURE_LIMIT). */
  private readonly webTotals: FixedWindowLimiter;
  private readonly bursts: BurstLog<{ address: string; kind: LoginKind }>;
  /** The kind of each address's latest failed login, oldest first (at most MAX_LIMITED_KEYS): a connection refused unread counts as one more. */
  private readonly lastKinds = new Map<string, Exclude<LoginKind, 'timeout'>>();

  constructor(logger: Logger, now: () => number = Date.now, logWindowMs = LOGIN_LOG_WINDOW_MS) {
    this.limiter = new FixedWindowLimiter(LOGIN_FAILURE_LIMIT, LOGIN_WINDOW_MS, now);
    this.webTotals = new FixedWindowLimiter(WEB_FAILURE_LIMIT, LOGIN_WINDOW_MS, now);
    this.bursts = new BurstLog(
      logger,
      { first: 'auth.login_failed', burst: 'auth.login_burst', message: (b) => `${b.count} failed logins (${b.kind}) from ${b.address} in ${b.window_seconds} s` },
      now,
      logWindowMs,
    );
  }

  /**
   * Seconds until `address` may try again (0: it may), so a door can refuse before reading more; a
   * refused attempt is counted in the address's burst.
   */
  refusedFor(address: string, kind: LoginKind): number {
    const key = loginLimitKey(address);
    const wait = this.limiter.retryAfterSeconds(key);
    if (wait > 0) this.record(key, kind, true);
    return wait;
  }

  /**
   * Whether a new connection from `address` is closed before anything of it is read: the address is over
   * its limit, so whatever it would send is refused anyway. A refused connection counts in the address's
   * burst as a refused attempt of the kind it last failed with.
   */
  refusesConnection(address: string): boolean {
    const key = loginLimitKey(address);
    if (this.limiter.retryAfterSeconds(key) === 0) return false;
    this.record(key, this.lastKinds.get(key) ?? 'token', true);
    return true;
  }

  /** Addresses whose failures are remembered now (at most MAX_LIMITED_KEYS, rate-limit.ts). */
  get limitedAddresses(): number {
    return this.limiter.size;
  }

  /** Counts an attempt from `address` now; see LoginAttempt. */
  begin(address: LimitAddress, kind: LoginKind): LoginAttempt {
    const key = keyOf(address);
    const reserved = this.reserve(address);
    if (reserved.retryAfterSeconds > 0) this.record(key, kind, true);
    let settled = reserved.retryAfterSeconds > 0;
    return {
      retryAfterSeconds: reserved.retryAfterSeconds,
      refund: () => {
        if (settled) return;
        settled = true;
        reserved.refund();
      },
      failed: (fields) => {
        if (settled) return;
        settled = true;
        this.record(key, kind, false, fields);
      },
    };
  }

  /** A login that did not fail a check but never came (`timeout`): logged as a failure, not limited. */
  noted(address: LimitAddress, kind: LoginKind, fields?: Record<string, unknown>): void {
    this.record(keyOf(address), kind, false, fields);
  }

  /** One attempt against its key's limit, and a browser bucket's also against its address's total: refused when over either. */
  private reserve(address: LimitAddress): { retryAfterSeconds: number; refund(): void } {
    const own = this.limiter.reserve(keyOf(address));
    if (typeof address === 'string' || own.retryAfterSeconds > 0) return own;
    const total = this.webTotals.reserve(loginLimitKey(address.address));
    if (total.retryAfterSeconds === 0) return { retryAfterSeconds: 0, refund: () => (own.refund(), total.refund()) };
    own.refund();
    return total;
  }

  /** Tells `listener` of every log window that had failures, when it closes. Returns the unsubscribe. */
  onBurst(listener: (burst: LoginBurst) => void): () => void {
    return this.bursts.onBurst(listener);
  }

  /** Closes every open window now (the service stops): their counts are logged, not lost. */
  flush(): void {
    this.bursts.flush();
  }

  private record(key: string, kind: LoginKind, refused: boolean, fields?: Record<string, unknown>): void {
    if (kind !== 'timeout') this.rememberKind(key, kind);
    this.bursts.record({ address: key, kind }, refused, fields);
  }

  private rememberKind(key: string, kind: Exclude<LoginKind, 'timeout'>): void {
    this.lastKinds.delete(key);
    this.lastKinds.set(key, kind);
    if (this.lastKinds.size > MAX_LIMITED_KEYS) this.lastKinds.delete(this.lastKinds.keys().next().value!);
  }
}

function keyOf(address: LimitAddress): string {
  return loginLimitKey(typeof address === 'string' ? address : address.bucket);
}
