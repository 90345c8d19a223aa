import { writeSync } from 'node:fs';
import { mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * A line written on the loop's thread that took longer than this (ms, wall clock) sends the file back to
 * libuv's pool for a while (SLOW_BACKOFF_MS): the kernel throttles writers of a disk that cannot keep up
 * (pauses of up to 200 ms each), and the loop is shared (the editor's extension host).
 */
export const SLOW_LINE_WRITE_MS = 20;
/**
 * How long (ms) lines go through the pool after the loop's writes were slow, doubled each time they are
 * found slow again, up to SLOW_BACKOFF_MAX_MS; then lines try the loop again. The wall clock cannot
 * tell a throttled disk from a thread that waited for a core on a busy machine, and for good (s12-s28) left
 * a long-running service paying the pool's hand-off for every line after one busy second. A disk that stays
 * slow costs one slow line an hour at most, once the backoff is at its longest.
 */
export const SLOW_BACKOFF_MS = 60_000;
export const SLOW_BACKOFF_MAX_MS = 60 * 60_000;
/** A synchronous write this slow (ms) or slower counts toward SLOW_LINE_WRITE_MS within a second. */
const SLOW_WRITE_COUNTED_MS = 1;

export interface RotatingFileOptions {
  /** Rotate before a write would take the file past this size (bytes). */
  maxBytes: number;
  /** Rotated files kept: file.1 (newest) .. file.N (oldest). 0 keeps none. */
  maxFiles: number;
  /** Lines waiting for the disk beyond this many bytes are dropped (and counted) rather than held. */
  maxPendingBytes?: number;
  /** Called once per run of failures, never with a line's content. */
  onError?: (error: unknown) => void;
  /** The clock a line's synchronous write is timed by (ms); performance.now unless a test gives one. */
  now?: () => number;
  /**
   * Whether a line may be appended by a synchronous write on the loop's thread (default true). False
   * where that loop is shared with others (the editor's extension host): a disk that hangs would hang
   * them too, so every line goes through the pool.
   */
  writeOnLoop?: boolean;
}

/**
 * An append-only text file, rotated by size. A line is appended at once by a synchronous write (one small
 * write into the page cache, 10-20 us, cheaper than a hand-off to libuv's pool and the wake-up of its
 * thread) while the file is open, nothing is queued or on the pool (so no line overtakes another) and the
 * line fits; anything else (opening, rotating, failures, and every line for a while after one such write was slow)
 * goes through a queue written by one async loop. Writes are fire-and-forget; flush() waits for them.
 */
export class RotatingFile {
  private handle: FileHandle | null = null;
  private size = 0;
  private pending: string[] = [];
  private pendingBytes = 0;
  private dropped = 0;
  private running: Promise<void> | null = null;
  private failing = false;
  private closed = false;
  /** A synchronous write was slow (SLOW_LINE_WRITE_MS): every line goes through the pool until then (`now`'s clock). */
  private slowUntil = -Infinity;
  /** The pool's next stretch when the loop's writes are found slow again. */
  private backoff = SLOW_BACKOFF_MS;
  /** Time the synchronous writes took on the loop in the second from windowStart (`timed`). */
  private spentInWindow = 0;
  private windowStart = -Infinity;
  /** The close of a handle a failed write dropped. */
  private closingBroken: Promise<unknown> = Promise.resolve();
  private readonly maxPendingBytes: number;
  private readonly now: () => number;

  constructor(
    readonly file: string,
    private readonly options: RotatingFileOptions,
  ) {
    this.maxPendingBytes = options.maxPendingBytes ?? 16 * 1024 * 1024;
    this.now = options.now ?? (() => performance.now());
  }

  write(text: string): void {
    if (this.closed) return;
    if (this.writeNow(text)) return;
    if (this.pendingBytes + text.length > this.maxPendingBytes) {
      this.dropped++;
      return;
    }
    this.pending.push(text);
    this.pendingBytes += text.length;
    this.kick();
  }

  /** Resolves once everything written so far is on disk (or failed). */
  async flush(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Flushes and closes the file; later writes (from this call on) are ignored. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    const handle = this.handle;
    this.handle = null;
    await handle?.close().catch(() => undefined);
    await this.closingBroken;
  }

  /** Appends `text` synchronously if it may (see the class); false when the queue is to take it. */
  private writeNow(text: string): boolean {
    const handle = this.handle;
    if (!handle || this.running || this.failing || this.dropped > 0 || this.options.writeOnLoop === false || this.slowed()) return false;
    const bytes = Buffer.from(text, 'utf8');
    if (this.size + bytes.length > this.options.maxBytes) return false;
    const started = this.now();
    let written = 0;
    try {
      while (written < bytes.length) written += writeSync(handle.fd, bytes, written, bytes.length - written);
      this.size += bytes.length;
      return true;
    } catch (error) {
      this.size += written;
      this.failed(error);
      // Nothing of it in the file: the queue tries it again once the file is reopened. Part of it: the
      // rest is lost, as a batch the queue fails to write is, and the queue ends the line so the next
      // one starts on its own.
      if (written === 0) return false;
      this.pending.push('\n');
      this.pendingBytes += 1;
      this.kick();
      return true;
    } finally {
      this.timed(this.now() - started);
    }
  }

  /**
   * Counts `ms` spent on the loop by a synchronous write: one slower than SLOW_LINE_WRITE_MS, or slow
   * ones (a millisecond or more: a disk that throttles every write a little) adding up to it within a
   * second, sends the file back to the pool for the backoff's time. A write that then failed counts too (a
   * disk that hangs, then errs). A healthy write (10-20 us) is not counted: a thousand lines a second of
   * them would add up to the limit and end what they save.
   */
  private timed(ms: number): void {
    const now = this.now();
    if (now - this.windowStart > 1_000) {
      this.windowStart = now;
      this.spentInWindow = 0;
    }
    if (ms >= SLOW_WRITE_COUNTED_MS) this.spentInWindow += ms;
    if (ms > SLOW_LINE_WRITE_MS || this.spentInWindow > SLOW_LINE_WRITE_MS) {
      this.slowUntil = now + this.backoff;
      this.backoff = Math.min(this.backoff * 2, SLOW_BACKOFF_MAX_MS);
      this.spentInWindow = 0;
    }
  }

  /** Whether lines go through the pool for now (the loop's writes were slow a while ago): no clock read until the first slow write. */
  private slowed(): boolean {
    return this.slowUntil !== -Infinity && this.now() < this.slowUntil;
  }

  /** A write failed: reported once a run of failures, and the handle dropped (reopened by the next batch). */
  private failed(error: unknown): void {
    if (!this.failing) this.options.onError?.(error);
    this.failing = true;
    const handle = this.handle;
    this.handle = null;
    // Waited for by close(), so nothing of the file is still open once it resolves.
    if (handle) this.closingBroken = handle.close().catch(() => undefined);
  }

  private kick(): void {
    if (this.running) return;
    this.running = (async () => {
      try {
        await this.drain();
      } finally {
        this.running = null;
      }
      if (this.pending.length > 0) this.kick();
    })();
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const lines = this.pending;
      this.pending = [];
      this.pendingBytes = 0;
      if (this.dropped > 0) {
        lines.unshift(`${JSON.stringify({ time: new Date().toISOString(), level: 'warn', event: 'log.lines_dropped', count: this.dropped })}\n`);
        this.dropped = 0;
      }
      try {
        await this.writeLines(lines);
        this.failing = false;
      } catch (error) {
        // Reopen on the next batch: the handle may be what broke.
        this.failed(error);
      }
    }
  }

  private async writeLines(lines: string[]): Promise<void> {
    await this.ensureOpen();
    let chunk: Buffer[] = [];
    let chunkBytes = 0;
    const writeChunk = async () => {
      if (chunkBytes === 0) return;
      const handle = await this.ensureOpen();
      await handle.appendFile(Buffer.concat(chunk, chunkBytes));
      this.size += chunkBytes;
      chunk = [];
      chunkBytes = 0;
    };
    for (const line of lines) {
      const bytes = Buffer.from(line, 'utf8');
      // A line larger than maxBytes still gets written, alone in a fresh file.
      if (this.size + chunkBytes + bytes.length > this.options.maxBytes && this.size + chunkBytes > 0) {
        await writeChunk();
        await this.rotate();
      }
      chunk.push(bytes);
      chunkBytes += bytes.length;
    }
    await writeChunk();
  }

  private async ensureOpen(): Promise<FileHandle> {
    if (this.handle) return this.handle;
    await mkdir(dirname(this.file), { recursive: true });
    const handle = await open(this.file, 'a', 0o600);
    this.size = (await handle.stat()).size;
    this.handle = handle;
    return handle;
  }

  private async rotate(): Promise<void> {
    const handle = this.handle;
    this.handle = null;
    await handle?.close();
    const { maxFiles } = this.options;
    if (maxFiles <= 0) {
      await unlink(this.file).catch(ignoreMissing);
    } else {
      for (let index = maxFiles - 1; index >= 1; index--) {
        await rename(`${this.file}.${index}`, `${this.file}.${index + 1}`).catch(ignoreMissing);
      }
      await rename(this.file, `${this.file}.1`).catch(ignoreMissing);
    }
    await this.ensureOpen();
  }
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
}
