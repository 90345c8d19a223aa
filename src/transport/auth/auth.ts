import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ServiceError, type ServiceConfig } from '../../protocol';
import type { Logger } from '../../log/logger';
import type { DeviceCredentials } from './device-credentials';
import { LoginFailures } from './login-failures';
import { PasswordChecksBusy, decoyHash, passwordChecksBusy, verifyPassword } from './passwords';

/**
 * Who a token stands for, remembering the credential it was checked against (a digest), so a socket
 * can be re-checked when service.json changes: the access token rotated, the user removed or given a
 * new password.
 */
export type Principal =
  /** The access token. */
  | { kind: 'access'; credential: Buffer; deviceId?: undefined }
  /**
   * A paired device: the owner's, with its own credential (the hex digest its row stores, kept as text so
   * re-checking it before every command and event makes no string: isValid), revocable on its own.
   */
  | { kind: 'access'; credential: string; deviceId: string }
  | { kind: 'session'; username: string; expiresAt: number; credential: string };

interface Session {
  username: string;
  expiresAt: number;
  token: string;
  /** The user's password hash at login: a new password (or removing the user) ends the session. */
  passwordHash: string;
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * Who may talk to the service: the access token of service.json, and session tokens issued by
 * `POST /auth`. Session tokens live in memory only (a restart signs everyone out), looked up by their
 * SHA-256 digest so the lookup does not leak timing about the token.
 */
export class Authenticator {
  private readonly sessions = new Map<string, Session>();
  /** Failed logins per address, of `POST /auth` and of WebSocket `auth` frames alike (login-failures.ts). */
  readonly failures: LoginFailures;

  constructor(
    private readonly config: () => ServiceConfig,
    private readonly logger: Logger,
    /** Told of each session token, so the log redactor can hide it while it lives. */
    private readonly secrets: { addSecret(token: string): void; removeSecret(token: string): void } = { addSecret() {}, removeSecret() {} },
    private readonly now: () => number = Date.now,
    /** The paired devices' credentials (absent: only the access token and sessions). */
    readonly devices?: DeviceCredentials,
    /** The window failed logins are counted over into one burst (login-failures.ts; tests shorten it). */
    loginLogWindowMs?: number,
  ) {
    this.failures = new LoginFailures(logger, now, loginLogWindowMs);
  }

  /** The principal a token stands for, or null. Comparisons are constant-time. */
  verify(token: unknown): Principal | null {
    if (typeof token !== 'string' || token.length === 0 || token.length > 4096) return null;
    const given = digest(token);
    const accessToken = this.config().auth_token;
    if (accessToken) {
      const expected = this.accessTokenDigest(accessToken);
      // The digest in force itself is kept: isValid then compares identities while the token is unchanged.
      if (timingSafeEqual(given, expected)) return { kind: 'access', credential: expected };
    }
    const key = given.toString('hex'); // tokenHash(token): a device's token is stored as this digest
    const device = this.devices?.deviceOf(key);
    if (device) {
      this.devices!.seen(device.device_id);
      return { kind: 'access', credential: key, deviceId: device.device_id };
    }
    const session = this.liveSession(key);
    return session ? { kind: 'session', username: session.username, expiresAt: session.expiresAt, credential: key } : null;
  }

  /** The access token's digest, made once per token (see accessTokenDigest). */
  private accessDigest: { token: string; digest: Buffer } | undefined;

  /**
   * Every event to every socket re-checks its credential (isValid): hashing the access token each time
   * was a tenth of a conversation's fan-out to 100 followers (`npm run bench -- follow`).
   */
  private accessTokenDigest(token: string): Buffer {
    if (this.accessDigest?.token !== token) this.accessDigest = { token, digest: digest(token) };
    return this.accessDigest.digest;
  }

  /**
   * Is the credential a principal was verified with still good? False once the access token changed, the
   * device was revoked, or
   * the session expired or its user was removed or given a new password (sockets are re-checked on
   * every config change and before each command and event).
   */
  isValid(principal: Principal): boolean {
    if (principal.kind === 'session') return this.liveSession(principal.credential) !== undefined;
    if (principal.deviceId !== undefined) return this.devices?.isLive(principal.deviceId, principal.credential) ?? false;
    const accessToken = this.config().auth_token;
    if (!accessToken) return false;
    // The same digest object while the token is unchanged (verify keeps it): no comparison of bytes.
    const expected = this.accessTokenDigest(accessToken);
    return principal.credential === expected || timingSafeEqual(principal.credential, expected);
  }

  /** The session of a token digest while it lasts; an expired or orphaned one is forgotten. */
  private liveSession(key: string): Session | undefined {
    const session = this.sessions.get(key);
    if (!session) return undefined;
    const user = this.config().users.find((u) => u.username === session.username);
    if (session.expiresAt > this.now() && user?.password_hash === session.passwordHash) return session;
    this.expire(key);
    return undefined;
  }

  /**
   * Refuses a login that could not be checked anyway (the address is blocked, or too many checks
   * wait), so `POST /auth` answers 429 before reading the body: a burst then costs the event loop
   * little. login() still counts and checks every attempt itself.
   */
  refuseEarly(clientAddress: string): void {
    const wait = this.failures.refusedFor(clientAddress, 'password');
    if (wait > 0) throw new ServiceError('rate_limited', `too many failed logins; retry in ${wait} s`, wait);
    if (passwordChecksBusy()) throw new ServiceError('rate_limited', 'too many logins in progress; retry in 1 s', 1);
  }

  /**
   * `POST /auth`: a session token for a user of service.json. Every attempt is counted against the
   * client address before the password is checked (so a parallel burst cannot all be checked), and only
   * a successful one is refunded: a success never clears anyone's failures.
   */
  async login(username: string, password: string, clientAddress: string): Promise<{ token: string; expires_in: number }> {
    const attempt = this.failures.begin(clientAddress, 'password');
    if (attempt.retryAfterSeconds > 0) {
      throw new ServiceError('rate_limited', `too many failed logins; retry in ${attempt.retryAfterSeconds} s`, attempt.retryAfterSeconds);
    }
    const user = this.config().users.find((u) => u.username === username);
    let valid: boolean;
    try {
      valid = await verifyPassword(password, user?.password_hash ?? decoyHash);
    } catch (error) {
      attempt.refund();
      if (error instanceof PasswordChecksBusy) throw new ServiceError('rate_limited', 'too many logins in progress; retry in 1 s', 1);
      throw error;
    }
    if (!user || !valid) {
      attempt.failed();
      throw new ServiceError('invalid_token', 'invalid username or password');
    }
    attempt.refund();
    const ttl = this.config().session_ttl_seconds;
    const token = randomBytes(32).toString('base64url');
    this.sweepExpired();
    this.sessions.set(digest(token).toString('hex'), { username, expiresAt: this.now() + ttl * 1000, token, passwordHash: user.password_hash });
    this.secrets.addSecret(token);
    this.logger.info('auth.login', { username, address: clientAddress });
    return { token, expires_in: ttl };
  }

  /** The paired device a principal stands for, if any. */
  static deviceOf(principal: Principal): string | undefined {
    return principal.kind === 'access' ? principal.deviceId : undefined;
  }

  /** Seconds left for a principal (null: the access token does not expire). */
  expiresIn(principal: Principal): number | null {
    return principal.kind === 'access' ? null : Math.max(0, Math.round((principal.expiresAt - this.now()) / 1000));
  }

  private sweepExpired(): void {
    for (const key of [...this.sessions.keys()]) this.liveSession(key);
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
