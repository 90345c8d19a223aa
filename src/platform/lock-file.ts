import { readFileSync, unlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { link, open, readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import { PRIVATE_FILE_MODE } from './file-modes';
import { processNonce } from './process-nonce';

export const LOCK_FILE_NAME = 'service.lock';

interface LockInfo {
  pid: number;
  hostname: string;
  started_at: string;
  /** The kernel's boot id (Linux): a lock of this host from an earlier boot belongs to no process. */
  boot_id?: string;
  /**
   * The thread of the process that holds it (worker_threads' threadId; 0: the main thread), that process's
   * nonce (process-nonce.ts: shared by its threads, no other process's) and when it started (Linux:
   * /proc/self/stat's starttime): the editor runs the service on a thread of its extension host, so another
   * thread of this same process may hold the lock (a service restarted while the one before still
   * finishes), which no pid check can tell from a lock left by an earlier process that had our pid.
   * Locks of s26 have no nonce; a worker started before its main thread made one writes none either.
   */
  thread?: number;
  process_nonce?: string;
  process_start?: string;
}

export interface LockOptions {
  /**
   * Take over a lock recorded by another host, whose process cannot be checked from here (a recreated
   * container gets a new host name). A live process of this host still keeps its lock.
   */
  breakLock?: boolean;
  /** The lock file's name in the directory (default service.lock). */
  fileName?: string;
  /**
   * For locks held only for a moment (service.json's): one older than this is stale whatever its host,
   * since no holder keeps it that long.
   */
  staleAfterMs?: number;
}

let cachedBootId: string | null | undefined;
/** This boot's id, or null where there is none (not Linux). */
function bootId(): string | null {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
    } catch {
      cachedBootId = null;
    }
  }
  return cachedBootId;
}

let cachedStart: string | null | undefined;
/** When this process started (Linux, in clock ticks since boot), or null where that is not known. */
function processStart(): string | null {
  if (cachedStart === undefined) {
    try {
      // The fields after the command's name, which is in parentheses and may hold spaces: starttime is the 20th.
      const stat = readFileSync('/proc/self/stat', 'latin1');
      cachedStart = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
    } catch {
      cachedStart = null;
    }
  }
  return cachedStart;
}

export interface DirLock {
  readonly dir: string;
  readonly file: string;
  release(): Promise<void>;
}

/** Lock files held by this process, by absolute path, with their exact content. */
const held = new Map<string, string>();
/** Lock files an open in this process is acquiring right now. */
const acquiring = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const [file, content] of held) {
      try {
        if (readFileSync(file, 'utf8') === content) unlinkSync(file);
      } catch {
        // Exiting anyway; a leftover lock is detected as stale next time.
      }
    }
    held.clear();
  });
}

function parseLock(text: string): LockInfo | null {
  try {
    const value = JSON.parse(text) as Partial<LockInfo>;
    if (typeof value.pid !== 'number' || !Number.isSafeInteger(value.pid) || value.pid <= 0) return null;
    if (typeof value.hostname !== 'string') return null;
    const boot = typeof value.boot_id === 'string' ? { boot_id: value.boot_id } : {};
    const thread = typeof value.thread === 'number' ? { thread: value.thread } : {};
    const nonce = typeof value.process_nonce === 'string' ? { process_nonce: value.process_nonce } : {};
    const start = typeof value.process_start === 'string' ? { process_start: value.process_start } : {};
    return { pid: value.pid, hostname: value.hostname, started_at: String(value.started_at ?? ''), ...boot, ...thread, ...nonce, ...start };
  } catch {
    return null;
  }
}

/** Whether a process of this host with that pid exists (EPERM: it exists, owned by someone else). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Another process owns the data directory. */
export class DataDirInUseError extends Error {
  constructor(
    dir: string,
    readonly pid: number,
    host?: string,
  ) {
    super(`data directory ${dir} is in use by process ${pid}${host ? ` on host ${host}` : ''}`);
    this.name = 'DataDirInUseError';
  }
}

function inUse(dir: string, pid: number, host?: string): Error {
  return new DataDirInUseError(dir, pid, host);
}

/**
 * The lock was written by another host, whose process cannot be checked from here. Not a
 * DataDirInUseError: there is no local service to attach to.
 */
export class LockedByOtherHostError extends Error {
  constructor(
    label: string,
    readonly pid: number,
    readonly host: string,
    since: string,
  ) {
    super(
      `${inUse(label, pid, host).message} (since ${since}). If that host or container is gone ` +
        '(a recreated container has a new host name), start with `remote-assistant serve --break-lock` to take the lock over.',
    );
    this.name = 'LockedByOtherHostError';
  }
}

/** Why a lock someone else wrote may be taken over, or null if its process may be alive. */
function staleReason(info: LockInfo | null, me: string, options: LockOptions): string | null {
  if (!info) return 'unreadable lock file';
  if (options.staleAfterMs !== undefined && Date.now() - Date.parse(info.started_at) > options.staleAfterMs) {
    return `older than ${options.staleAfterMs} ms`;
  }
  if (info.hostname !== me) return options.breakLock ? `taken over from host ${info.hostname} (--break-lock)` : null;
  const boot = bootId();
  // After a restart pids are handed out again: the recorded one may now be any live process.
  if (boot !== null && info.boot_id !== undefined && info.boot_id !== boot) return 'this machine restarted since';
  if (info.pid === process.pid) {
    // Another thread of this very process holds it (this thread's own are refused before: `held`).
    if (info.thread !== undefined && info.thread !== threadId && writtenByThisProcess(info)) return null;
    // Left by an earlier process that had the same pid (containers often run as pid 1).
    return 'process is gone';
  }
  if (!pidAlive(info.pid)) return 'process is gone';
  return null;
}

/**
 * Whether a lock with our pid was written by this process (by any of its threads) rather than by an earlier
 * one that had our pid: its nonce tells, on every platform. Without a nonce on either side (a lock of s26,
 * a worker that has none), its start time where /proc tells it, and as this process's where it does not.
 */
function writtenByThisProcess(info: LockInfo): boolean {
  const nonce = processNonce();
  if (info.process_nonce !== undefined && nonce !== null) return info.process_nonce === nonce;
  return info.process_start === undefined || info.process_start === processStart();
}

/**
 * Makes this process the only owner of `dir`: `service.lock` is created with O_EXCL. An existing lock
 * whose process is alive on this host refuses the open; one whose process is gone, from an earlier
 * boot, or unreadable is taken over with a warning. A lock from another host is respected, since its
 * process cannot be checked, unless `breakLock` (the message names `serve --break-lock`).
 */
/** What the lock reports (a stale or broken lock taken over): the service's logger fits. */
export interface LockLogger {
  warn(event: string, fields?: Record<string, unknown>): void;
}

export async function acquireLock(dir: string, logger: LockLogger, label: string = dir, options: LockOptions = {}): Promise<DirLock> {
  const file = path.resolve(dir, options.fileName ?? LOCK_FILE_NAME);
  if (held.has(file) || acquiring.has(file)) throw inUse(label, process.pid);
  acquiring.add(file);
  try {
    return await takeLock(dir, label, file, logger, options);
  } finally {
    acquiring.delete(file);
  }
}

async function takeLock(dir: string, label: string, file: string, logger: LockLogger, options: LockOptions): Promise<DirLock> {
  const me = hostname();
  const boot = bootId();

  // A lock that vanishes between our create and our read (its holder released it) costs an attempt;
  // waiting for another starter's takeover does not, for up to a few seconds.
  const takeoverDeadline = Date.now() + 5_000;
  // The unreadable lock being waited for, and when (on our clock) we first saw that same file.
  let unreadable: { id: string; since: number } | undefined;
  for (let attempt = 0; attempt < 20; attempt++) {
    const start = processStart();
    const nonce = processNonce();
    const content = JSON.stringify({
      pid: process.pid,
      hostname: me,
      started_at: new Date().toISOString(),
      ...(boot !== null ? { boot_id: boot } : {}),
      thread: threadId,
      ...(nonce !== null ? { process_nonce: nonce } : {}),
      ...(start !== null ? { process_start: start } : {}),
    } satisfies LockInfo);
    if (await createWithContent(file, content)) {
      held.set(file, content);
      installExitHook();
      return { dir, file, release: () => releaseLock(file, content, logger) };
    }

    const seen = await readLockState(file);
    if (seen === null) continue;
    const { text } = seen;
    const info = parseLock(text);
    // Empty or cut and young: another starter's O_EXCL fallback (createWithContent) between its create
    // and its write. Held, not damaged: looked at again until it is whole or too old to be one.
    if (!info) {
      if (unreadable?.id !== seen.id) unreadable = { id: seen.id, since: Date.now() };
      if (stillBeingWritten(seen, unreadable.since)) {
        attempt -= 1;
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
    }
    const reason = staleReason(info, me, options);
    if (reason === null && info && info.hostname !== me) throw new LockedByOtherHostError(label, info.pid, info.hostname, info.started_at);
    if (reason === null) throw inUse(label, info!.pid);
    // Remove only the lock judged stale, and only while no other starter is removing it: between our
    // read and our unlink another one may have removed it and made its own, which we would remove
    // (both would then hold the directory). The takeover file makes read-and-remove one step.
    const takeover = await beginTakeover(file);
    if (!takeover) {
      attempt -= 1;
      if (Date.now() > takeoverDeadline) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
      continue;
    }
    try {
      // The same file, not only the same text: an empty lock another starter has just made (O_EXCL
      // fallback) reads as '' like the stale empty one it replaced.
      const now = await readLockState(file);
      if (now === null || now.text !== text || now.id !== seen.id) continue;
      const fields = { dir, pid: info?.pid ?? null, host: info?.hostname ?? null, started_at: info?.started_at ?? null, reason };
      if (info && info.hostname !== me) logger.warn('store.lock_broken', fields);
      else logger.warn('store.lock_stale', fields);
      await unlink(file).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    } finally {
      await takeover.end();
    }
  }
  throw new Error(`could not lock data directory ${label}: lock file keeps changing`);
}

/**
 * An unreadable lock younger than this may be one being written (the O_EXCL fallback creates it empty,
 * then writes it): waited for. Older, it is damaged (a starter killed between the two, a power loss).
 */
const LOCK_WRITE_MS = 5_000;

/**
 * Whether an unreadable lock may still be one being written: its mtime says it is younger than
 * LOCK_WRITE_MS, and we have not watched that same file (LockState.id) for LOCK_WRITE_MS on our own
 * clock. An mtime in the future (a clock set back, a network file system's) cannot be trusted: then
 * only our clock decides, so the wait ends whatever the mtime says.
 */
function stillBeingWritten(lock: LockState, watchedSince: number): boolean {
  const now = Date.now();
  if (now - watchedSince >= LOCK_WRITE_MS) return false;
  return now - lock.mtimeMs < LOCK_WRITE_MS;
}

/** A takeover file older than this was left by a starter killed while taking over: it is removed. */
const TAKEOVER_STALE_MS = 10_000;

/**
 * The right to remove a stale lock, held by one starter at a time (`<lock>.takeover`, made like the
 * lock): null while another starter holds it. One left by a starter that died holding it (its pid gone,
 * or older than TAKEOVER_STALE_MS) is removed, and the caller tries again.
 */
async function beginTakeover(file: string): Promise<{ end: () => Promise<void> } | null> {
  const takeover = `${file}.takeover`;
  const content = JSON.stringify({ pid: process.pid, at: Date.now() });
  if (await createWithContent(takeover, content)) {
    return { end: () => unlink(takeover).catch(() => {}) };
  }
  const text = await readLockText(takeover);
  let holder: { pid?: unknown; at?: unknown } | null = null;
  try {
    holder = text ? (JSON.parse(text) as { pid?: unknown; at?: unknown }) : null;
  } catch {
    holder = null;
  }
  const left =
    holder === null
      ? (await fileAge(takeover)) > TAKEOVER_STALE_MS
      : typeof holder.pid !== 'number' || !pidAlive(holder.pid) || typeof holder.at !== 'number' || Date.now() - holder.at > TAKEOVER_STALE_MS;
  if (left && (await readLockText(takeover)) === text) await unlink(takeover).catch(() => {});
  return null;
}

/** How long ago a file was last changed, in ms (0 if it is gone). */
async function fileAge(file: string): Promise<number> {
  try {
    return Date.now() - (await stat(file)).mtimeMs;
  } catch {
    return 0;
  }
}

interface LockState {
  text: string;
  mtimeMs: number;
  /** Which file this is (inode, size, times to the nanosecond): a file removed and made again differs. */
  id: string;
}

/**
 * The lock file's text with its identity, from one open file (so both are of the same file); null if
 * there is none. A file that cannot be read is '' with what stat can say of it.
 */
async function readLockState(file: string): Promise<LockState | null> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return statState(file);
  }
  try {
    const st = await handle.stat({ bigint: true });
    const text = await handle.readFile('utf8').catch(() => '');
    return { text, mtimeMs: Number(st.mtimeMs), id: identityOf(st) };
  } finally {
    await handle.close();
  }
}

async function statState(file: string): Promise<LockState | null> {
  try {
    const st = await stat(file, { bigint: true });
    return { text: '', mtimeMs: Number(st.mtimeMs), id: identityOf(st) };
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : { text: '', mtimeMs: 0, id: '' };
  }
}

function identityOf(st: BigIntStats): string {
  return [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs, st.birthtimeNs].join(':');
}

/** The lock file's text; null if there is none, '' if it cannot be read. */
async function readLockText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : '';
  }
}

/**
 * Creates `file` holding `content`, or returns false if it exists. The content is written to a temp
 * file first and hard-linked into place, so no one ever reads a lock half-written (an empty lock
 * would look unreadable, hence stale, and be taken over). Where links are not supported: O_EXCL, the
 * file created empty then written; a starter that reads it meanwhile waits (LOCK_WRITE_MS).
 * Not fsynced: other processes read it through the page cache, whole from the link on, and a process
 * killed keeps what it wrote there; only a power loss can lose it, and after one no process holds any
 * lock, so whatever it leaves (no file, an empty or cut one: unreadable, or a pid of the boot before)
 * is rightly taken over (docs/design.md, "What a start makes durable").
 */
async function createWithContent(file: string, content: string): Promise<boolean> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeNew(temp, content);
  try {
    await link(temp, file);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw err;
  } finally {
    await unlink(temp).catch(() => {});
  }
  try {
    await writeNew(file, content);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** Writes a new file (O_EXCL), private. */
async function writeNew(file: string, content: string): Promise<void> {
  const fh = await open(file, 'wx', PRIVATE_FILE_MODE);
  try {
    await fh.writeFile(content);
  } finally {
    await fh.close();
  }
}

async function releaseLock(file: string, content: string, logger: LockLogger): Promise<void> {
  if (held.get(file) !== content) return;
  held.delete(file);
  try {
    if ((await readFile(file, 'utf8')) === content) await unlink(file);
    else logger.warn('store.lock_replaced', { file });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * Removes the lock of `dir` if a thread of this process that has ended holds it (a worker thread
 * terminated, or crashed, before it released its lock: its exit hook may not run). Other threads' locks,
 * other processes' and an unreadable one are left alone.
 */
export async function releaseEndedThreadLock(dir: string, endedThread: number, fileName: string = LOCK_FILE_NAME): Promise<void> {
  const file = path.resolve(dir, fileName);
  const text = await readLockText(file);
  const info = text ? parseLock(text) : null;
  if (!info || info.pid !== process.pid || info.thread !== endedThread || !writtenByThisProcess(info)) return;
  if ((await readLockText(file)) === text) await unlink(file).catch(() => undefined);
}
