import { randomBytes, timingSafeEqual } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

// Self-describing hash: scrypt$<N>$<r>$<p>$<salt base64>$<key base64>, so parameters can grow later.
const DEFAULTS = { N: 16384, r: 8, p: 1, keyLength: 32 };

/**
 * Each derivation keeps a core busy for tens of ms. At most this many run at once (2, or 1 on a machine
 * of 2 cores or fewer), so a burst of logins leaves a core for the event loop.
 */
export const MAX_CONCURRENT_DERIVATIONS = Math.max(1, Math.min(2, availableParallelism() - 1));
/** Password checks waiting for a slot beyond this are refused (PasswordChecksBusy), not queued without end. */
export const MAX_WAITING_CHECKS = 32;
/**
 * The derivation threads' nice value. A burst of wrong passwords (10 an address, so hundreds from
 * hundreds of addresses) is checked in the background: a chat's turn, the store's writes and every
 * socket take the cores first (issue 25: the login burst from 600 addresses doubled a chat's median
 * turn on 2 cores). On Linux the nice value is a thread's own, so only these threads are lowered.
 */
export const DERIVATION_NICE = 10;

/** Too many password checks are waiting: the caller should answer "retry later". */
export class PasswordChecksBusy extends Error {
  constructor() {
    super('too many password checks in progress');
    this.name = 'PasswordChecksBusy';
  }
}

/**
 * A derivation thread: scrypt runs synchronously on it, not on libuv's thread pool, whose 4 threads the
 * journal's fsync and every file read share (a derivation there held a thread for its whole length).
 * Plain JavaScript evaluated from this string, so it needs no bundle entry of its own.
 */
const DERIVER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
try { require('node:os').setPriority(0, workerData.nice); } catch {}
parentPort.on('message', ({ password, salt, keyLength, options }) => {
  try {
    parentPort.postMessage({ key: scryptSync(password, salt, keyLength, options) });
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) });
  }
});
`;

/** Idle derivation threads (started when first needed, kept for the next check; they hold no loop open). */
const idle: Worker[] = [];

function startDeriver(): Worker {
  const worker = new Worker(DERIVER_SOURCE, { eval: true, workerData: { nice: DERIVATION_NICE } });
  worker.unref();
  worker.on('error', () => {}); // followed by 'exit', which fails the derivation in flight
  return worker;
}

/** One derivation on an idle thread (there is one per slot); a thread that failed is replaced. */
function deriveOnThread(password: string, salt: Buffer, keyLength: number, options: ScryptParams): Promise<Buffer> {
  const worker = idle.pop() ?? startDeriver();
  return new Promise<Buffer>((resolve, reject) => {
    const onExit = (code: number) => {
      worker.off('message', onMessage);
      reject(new Error(`password derivation thread exited (${code})`));
    };
    const onMessage = (answer: { key?: Uint8Array; error?: string }) => {
      worker.off('exit', onExit);
      idle.push(worker);
      if (answer.key) resolve(Buffer.from(answer.key.buffer, answer.key.byteOffset, answer.key.byteLength));
      else reject(new Error(answer.error));
    };
    worker.once('message', onMessage);
    worker.once('exit', onExit);
    worker.postMessage({ password, salt, keyLength, options: { ...options, maxmem: 64 * 1024 * 1024 } });
  });
}

interface ScryptParams {
  N: number;
  r: number;
  p: number;
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

function derive(password: string, salt: Buffer, keyLength: number, options: ScryptParams): Promise<Buffer> {
  return inDerivationSlot(() => deriveOnThread(password, salt, keyLength, options));
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
