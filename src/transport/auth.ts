import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ServiceError, type ServiceConfig } from '../protocol';
import type { Logger } from '../log/logger';
import { FixedWindowLimiter } from './rate-limit';
import { PasswordChecksBusy, decoyHash, verifyPassword } from './passwords';

export type Principal =
  | { kind: 'access' }
  | { kind: 'session'; username: string; expiresAt: number };

export const LOGIN_FAILURE_LIMIT = 10;
export const LOGIN_WINDOW_MS = 5 * 60 * 1000;

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * Who may talk to the service: the access token of service.json, and session tokens issued by
 * `POST /auth`. Session tokens live in memory only (a restart signs everyone out), looked up by their
 * SHA-256 digest so the lookup does not leak timing about the token.
 */
export class Authenticator {
  private readonly sessions = new Map<string, { username: string; expiresAt: number; token: string }>();
  private readonly loginAttempts: FixedWindowLimiter;

  constructor(
    private readonly config: () => ServiceConfig,
    private readonly logger: Logger,
    /** Told of each session token, so the log redactor can hide it while it lives. */
    private readonly secrets: { addSecret(token: string): void; removeSecret(token: string): void } = { addSecret() {}, removeSecret() {} },
    private readonly now: () => number = Date.now,
  ) {
    this.loginAttempts = new FixedWindowLimiter(LOGIN_FAILURE_LIMIT, LOGIN_WINDOW_MS, now);
  }

  /** The principal a token stands for, or null. Comparisons are constant-time. */
  verify(token: unknown): Principal | null {
    if (typeof token !== 'string' || token.length === 0 || token.length > 4096) return null;
    const given = digest(token);
    const accessToken = this.config().auth_token;
    if (accessToken && timingSafeEqual(given, digest(accessToken))) return { kind: 'access' };
    const key = given.toString('hex');
    const session = this.sessions.get(key);
    if (!session) return null;
    if (session.expiresAt <= this.now()) {
      this.expire(key);
      return null;
    }
    return { kind: 'session', username: session.username, expiresAt: session.expiresAt };
  }

  /** Still valid? (A session token may expire while its socket is open.) */
  isValid(principal: Principal): boolean {
    return principal.kind === 'access' || principal.expiresAt > this.now();
  }

  /**
   * `POST /auth`: a session token for a user of service.json. Every attempt is counted against the
   * client address before the password is checked (so a parallel burst cannot all be checked), and only
   * a successful one is refunded: a success never clears anyone's failures.
   */
  async login(username: string, password: string, clientAddress: string): Promise<{ token: string; expires_in: number }> {
    const attempt = this.loginAttempts.reserve(clientAddress);
    if (attempt.retryAfterSeconds > 0) {
      throw new ServiceError('rate_limited', `too many failed logins; retry in ${attempt.retryAfterSeconds} s`, attempt.retryAfterSeconds);
    }
    const user = this.config().users.find((u) => u.username === username);
    let valid: boolean;
    try {
      valid = await verifyPassword(password, user?.password_hash ?? (await decoyHash));
    } catch (error) {
      attempt.refund();
      if (error instanceof PasswordChecksBusy) throw new ServiceError('rate_limited', 'too many logins in progress; retry in 1 s', 1);
      throw error;
    }
    if (!user || !valid) {
      this.logger.warn('auth.login_failed', { address: clientAddress });
      throw new ServiceError('invalid_token', 'invalid username or password');
    }
    attempt.refund();
    const ttl = this.config().session_ttl_seconds;
    const token = randomBytes(32).toString('base64url');
    this.sweepExpired();
    this.sessions.set(digest(token).toString('hex'), { username, expiresAt: this.now() + ttl * 1000, token });
    this.secrets.addSecret(token);
    this.logger.info('auth.login', { username, address: clientAddress });
    return { token, expires_in: ttl };
  }

  /** Seconds left for a principal (null: the access token does not expire). */
  expiresIn(principal: Principal): number | null {
    return principal.kind === 'access' ? null : Math.max(0, Math.round((principal.expiresAt - this.now()) / 1000));
  }

  private sweepExpired(): void {
    const now = this.now();
    for (const [key, session] of this.sessions) if (session.expiresAt <= now) this.expire(key);
  }

  private expire(key: string): void {
    const session = this.sessions.get(key);
    if (!session) return;
    this.sessions.delete(key);
    this.secrets.removeSecret(session.token);
  }
}

/** The bearer token of an `Authorization: Bearer <token>` header. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}
