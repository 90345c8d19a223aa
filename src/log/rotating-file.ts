import { mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface RotatingFileOptions {
  /** Rotate before a write would take the file past this size (bytes). */
  maxBytes: number;
  /** Rotated files kept: file.1 (newest) .. file.N (oldest). 0 keeps none. */
  maxFiles: number;
  /** Lines waiting for the disk beyond this many bytes are dropped (and counted) rather than held. */
  maxPendingBytes?: number;
  /** Called once per run of failures, never with a line's content. */
  onError?: (error: unknown) => void;
}

/**
 * An append-only text file written from a queue by one async loop, never by sync fs calls (the host's
 * event loop is shared), and rotated by size. Writes are fire-and-forget; flush() waits for them.
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
  private readonly maxPendingBytes: number;

  constructor(
    readonly file: string,
    private readonly options: RotatingFileOptions,
  ) {
    this.maxPendingBytes = options.maxPendingBytes ?? 16 * 1024 * 1024;
  }

  write(text: string): void {
    if (this.closed) return;
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

  /** Flushes and closes the file; later writes are ignored. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    const handle = this.handle;
    this.handle = null;
    await handle?.close().catch(() => undefined);
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
        if (!this.failing) this.options.onError?.(error);
        this.failing = true;
        // Reopen on the next batch: the handle may be what broke.
        const handle = this.handle;
        this.handle = null;
        await handle?.close().catch(() => undefined);
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
