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
 * The derivation threads' nice value, the lowest. A burst of wrong passwords (10 an address, so hundreds
 * from hundreds of addresses) is checked in the background: a chat's turn, the store's writes and every
 * socket take the cores first (issue 25: the login burst from 600 addresses doubled a chat's median turn
 * on 2 cores). On Linux the nice value is a thread's own, so only these threads are lowered. With
 * scheduler autogroups (on by default on desktops) a process's threads share one weight against other
 * sessions' processes, split over the cores by their load: a derivation busy on one core took that share
 * from the event loop on the other. Measured here (docs/design.md "Bursts of connections"): the event
 * loop's CPU against another session's busy process, a derivation spinning on the other core, was 410-510
 * ms of 3 s at nice 0, 860-960 at nice 10 and 1,260-1,850 at nice 19.
 */
export const DERIVATION_NICE = 19;

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

/** What a check waits in: its turn, by the key it was queued under (a client address). */
type Start = () => void;
let running = 0;
/** Keys with a derivation running now (at most one each). */
const runningKeys = new Set<string>();
/** Checks waiting, by key, oldest first; the map's order is the keys' turn (a served key goes to the back). */
const waiting = new Map<string, Start[]>();
let waitingCount = 0;

/** The next check to start: the oldest of the first key in turn that has none running. */
function startNext(): void {
  for (const [key, starts] of waiting) {
    if (running >= MAX_CONCURRENT_DERIVATIONS) return;
    if (runningKeys.has(key)) continue;
    const start = starts.shift()!;
    waiting.delete(key);
    if (starts.length > 0) waiting.set(key, starts);
    waitingCount -= 1;
    running += 1;
    runningKeys.add(key);
    start();
  }
}

/**
 * Runs `work` in a derivation slot: at most MAX_CONCURRENT_DERIVATIONS at once, at most one per key, and
 * keys in turn, so a burst from one address does not hold the checks of another behind all of its own.
 */
async function inDerivationSlot<T>(key: string, work: () => Promise<T>): Promise<T> {
  await new Promise<void>((resolve) => {
    const starts = waiting.get(key);
    if (starts) starts.push(resolve);
    else waiting.set(key, [resolve]);
    waitingCount += 1;
    startNext();
  });
  try {
    return await work();
  } finally {
    running -= 1;
    runningKeys.delete(key);
    // The key just served goes behind the others waiting, so the next check is another key's.
    const own = waiting.get(key);
    if (own) {
      waiting.delete(key);
      waiting.set(key, own);
    }
    startNext();
  }
}

/** Derivations running and checks waiting for one now (what a test or a bench watches). */
export function derivationLoad(): { running: number; waiting: number } {
  return { running, waiting: waitingCount };
}

/** A key of its own for a derivation of no queue (a hash being made), so it waits only for a free slot. */
let unqueued = 0;

function derive(password: string, salt: Buffer, keyLength: number, options: ScryptParams, key = `unqueued ${(unqueued += 1)}`): Promise<Buffer> {
  return inDerivationSlot(key, () => deriveOnThread(password, salt, keyLength, options));
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
  return waitingCount >= MAX_WAITING_CHECKS;
}

/**
 * Constant-time check of `password` against a stored hash; a malformed hash never matches. Throws
 * PasswordChecksBusy (at once, before any work) when too many checks already wait. `queue`: whose check
 * it is (the client address as logins are counted): one of a queue's checks runs at a time, queues in turn.
 */
export async function verifyPassword(password: string, stored: string, queue?: string): Promise<boolean> {
  if (passwordChecksBusy()) throw new PasswordChecksBusy();
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4], 'base64');
  const expected = Buffer.from(parts[5], 'base64');
  if (![N, r, p].every(Number.isInteger) || expected.length === 0) return false;
  try {
    const key = await derive(password, salt, expected.length, { N, r, p }, queue);
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
