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
/** The log says a burst once per this window and address: its first failure, then one counted line. */
export const LOGIN_LOG_WINDOW_MS = 60 * 1000;
/**
 * Addresses whose failures are counted apart in one log window; failures from further addresses are
 * counted together as `other addresses`, so a flood from many addresses writes a bounded log too.
 */
export const MAX_LOGGED_ADDRESSES = 256;
const OTHER_ADDRESSES = 'other addresses';

/** One log window's failed logins of one kind from one address: what the audit log records as a "login burst". */
export interface LoginBurst {
  /** The address as counted (an IPv4 address, an IPv6 /64, `relay:...`, or `other addresses`). */
  address: string;
  kind: LoginKind;
  /** Failed attempts in the window, those refused unchecked (over the limit) included. */
  count: number;
  /** Of `count`, those refused without being checked because the address was over the limit. */
  refused: number;
  window_seconds: number;
  /** When the window started (ISO 8601). */
  since: string;
}

/** An attempt counted before its credential is checked (so a parallel burst cannot all be checked). */
export interface LoginAttempt {
  /** Over the limit: refuse it without checking anything (it is logged as a failure). 0: go on and check. */
  readonly retryAfterSeconds: number;
  /** The credential was good (or could not be checked): the attempt does not count. */
  refund(): void;
  /** The credential was wrong; `fields` go on the log line if this failure is the one logged. */
  failed(fields?: Record<string, unknown>): void;
}

interface LogWindow {
  address: string;
  kind: LoginKind;
  start: number;
  count: number;
  refused: number;
}

/**
 * The one home of "failed logins per address", for every door that checks a credential: counts them
 * against the limit (refused without any hashing once over it), and logs them without letting a burst
 * overwrite the log: the first failure of an address in a window is a line, the rest are one counted
 * line when the window ends (`auth.login_burst`), also handed to onBurst listeners.
 */
export class LoginFailures {
  private readonly limiter: FixedWindowLimiter;
  /** Open log windows by kind and address, oldest first (a new window is re-inserted at the end). */
  private readonly windows = new Map<string, LogWindow>();
  private readonly listeners = new Set<(burst: LoginBurst) => void>();
  /** The kind of each address's latest failed login, oldest first (at most MAX_LIMITED_KEYS): a connection refused unread counts as one more. */
  private readonly lastKinds = new Map<string, Exclude<LoginKind, 'timeout'>>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    private readonly logWindowMs = LOGIN_LOG_WINDOW_MS,
  ) {
    this.limiter = new FixedWindowLimiter(LOGIN_FAILURE_LIMIT, LOGIN_WINDOW_MS, now);
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
  begin(address: string, kind: LoginKind): LoginAttempt {
    const key = loginLimitKey(address);
    const reserved = this.limiter.reserve(key);
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
  noted(address: string, kind: LoginKind, fields?: Record<string, unknown>): void {
    this.record(loginLimitKey(address), kind, false, fields);
  }

  /** Tells `listener` of every log window that had failures, when it closes. Returns the unsubscribe. */
  onBurst(listener: (burst: LoginBurst) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Closes every open window now (the service stops): their counts are logged, not lost. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const window of [...this.windows.values()]) this.close(window);
  }

  private record(key: string, kind: LoginKind, refused: boolean, fields?: Record<string, unknown>): void {
    this.closeEnded();
    if (kind !== 'timeout') this.rememberKind(key, kind);
    let window = this.windows.get(`${kind} ${key}`);
    if (!window) {
      const tracked = this.windows.size < MAX_LOGGED_ADDRESSES;
      const address = tracked ? key : OTHER_ADDRESSES;
      window = this.windows.get(`${kind} ${address}`);
      if (!window) {
        window = { address, kind, start: this.now(), count: 0, refused: 0 };
        this.windows.set(`${kind} ${address}`, window);
        this.logger.warn('auth.login_failed', { ...fields, address, kind, ...(refused ? { refused: true } : {}) });
        this.schedule();
      }
    }
    window.count += 1;
    if (refused) window.refused += 1;
  }

  private rememberKind(key: string, kind: Exclude<LoginKind, 'timeout'>): void {
    this.lastKinds.delete(key);
    this.lastKinds.set(key, kind);
    if (this.lastKinds.size > MAX_LIMITED_KEYS) this.lastKinds.delete(this.lastKinds.keys().next().value!);
  }

  private closeEnded(): void {
    const now = this.now();
    for (const window of this.windows.values()) {
      if (now - window.start < this.logWindowMs) break;
      this.close(window);
    }
  }

  private close(window: LogWindow): void {
    this.windows.delete(`${window.kind} ${window.address}`);
    const burst: LoginBurst = {
      address: window.address,
      kind: window.kind,
      count: window.count,
      refused: window.refused,
      window_seconds: Math.round(this.logWindowMs / 1000),
      since: new Date(window.start).toISOString(),
    };
    // The window's first failure is already a line; one failure alone needs no second.
    if (burst.count > 1) {
      this.logger.warn('auth.login_burst', { ...burst, message: `${burst.count} failed logins (${burst.kind}) from ${burst.address} in ${burst.window_seconds} s` });
    }
    for (const listener of this.listeners) {
      try {
        listener(burst);
      } catch (error) {
        this.logger.error('auth.login_burst_listener_failed', { error });
      }
    }
  }

  /** One timer, for the oldest open window's end (the map keeps them oldest first). */
  private schedule(): void {
    if (this.timer) return;
    const oldest = this.windows.values().next().value;
    if (!oldest) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.closeEnded();
        this.schedule();
      },
      Math.max(0, oldest.start + this.logWindowMs - this.now()),
    );
    this.timer.unref();
  }
}
