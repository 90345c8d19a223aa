import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { availableParallelism } from 'node:os';

// Self-describing hash: scrypt$<N>$<r>$<p>$<salt base64>$<key base64>, so parameters can grow later.
const DEFAULTS = { N: 16384, r: 8, p: 1, keyLength: 32 };

/**
 * scrypt runs on libuv's thread pool (4 threads), which file writes share: the journal's fsync waits
 * behind every derivation in that pool, and each derivation keeps a core busy. At most this many run
 * at once (2, or 1 on a machine of 2 cores or fewer), so a burst of logins leaves threads free for the
 * store and a core for the event loop.
 */
export const MAX_CONCURRENT_DERIVATIONS = Math.max(1, Math.min(2, availableParallelism() - 1));
/** Password checks waiting for a slot beyond this are refused (PasswordChecksBusy), not queued without end. */
export const MAX_WAITING_CHECKS = 32;

/** Too many password checks are waiting: the caller should answer "retry later". */
export class PasswordChecksBusy extends Error {
  constructor() {
    super('too many password checks in progress');
    this.name = 'PasswordChecksBusy';
  }
}

let running = 0;
const waiting: (() => void)[] = [];

async function inDerivationSlot<T>(work: () => Promise<T>): Promise<T> {
  if (running < MAX_CONCURRENT_DERIVATIONS) running += 1;
  else await new Promise<void>((resolve) => waiting.push(resolve));
  try {
    return await work();
  } finally {
    // The slot passes straight to the next waiter, so `running` only drops when nobody waits.
    const next = waiting.shift();
    if (next) next();
    else running -= 1;
  }
}

function derive(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return inDerivationSlot(
    () => new Promise<Buffer>((resolve, reject) => scrypt(password, salt, keyLength, { ...options, maxmem: 64 * 1024 * 1024 }, (error, key) => (error ? reject(error) : resolve(key)))),
  );
}

function formatHash(salt: Buffer, key: Buffer): string {
  return ['scrypt', DEFAULTS.N, DEFAULTS.r, DEFAULTS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  return formatHash(salt, await derive(password, salt, DEFAULTS.keyLength, DEFAULTS));
}

/** True when a password check would be refused now (PasswordChecksBusy): lets a caller refuse before reading more. */
export function passwordChecksBusy(): boolean {
  return waiting.length >= MAX_WAITING_CHECKS;
}

/**
 * Constant-time check of `password` against a stored hash; a malformed hash never matches. Throws
 * PasswordChecksBusy (at once, before any work) when too many checks already wait.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if (passwordChecksBusy()) throw new PasswordChecksBusy();
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4], 'base64');
  const expected = Buffer.from(parts[5], 'base64');
  if (![N, r, p].every(Number.isInteger) || expected.length === 0) return false;
  try {
    const key = await derive(password, salt, expected.length, { N, r, p });
    return timingSafeEqual(key, expected);
  } catch {
    return false;
  }
}

/**
 * What an unknown user's password is checked against: verifying costs what a real check costs (no user
 * enumeration) and never matches. Its key is random bytes rather than a derivation, which no password
 * finds either, and which costs a start no scrypt (a core and a thread of the pool for tens of ms).
 */
export const decoyHash = formatHash(randomBytes(16), randomBytes(DEFAULTS.keyLength));
