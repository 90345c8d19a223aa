import path from 'node:path';
import type { Logger } from '../log/logger';
import type { ReplayFailure } from './replay';
import { startWorkerThread } from '../platform/worker-thread';

/** What the compaction worker is asked to do: fold `segments` (oldest first) into the snapshot. */
export interface CompactionJob {
  dir: string;
  fileName: string;
  segments: string[];
}

export type CompactionResult = { ok: true; seq: number; snapshotBytes: number; wrote: boolean; applied: number; failures: ReplayFailure[] } | { ok: false; error: string };

export type CompactionDone = Extract<CompactionResult, { ok: true }>;

/** Runs one compaction in a worker thread, ended once it answered; resolves after the worker has exited. */
export function runCompactionWorker(job: CompactionJob): Promise<CompactionDone> {
  return new Promise((resolve, reject) => {
    let result: CompactionResult | undefined;
    let error: Error | undefined;
    const worker = startWorkerThread('compact-worker', __dirname, job);
    worker.on('message', (msg: CompactionResult) => {
      result = msg;
      void worker.terminate();
    });
    worker.on('error', (err) => {
      error = err;
    });
    worker.on('exit', (code) => {
      if (result?.ok) resolve(result);
      else if (result) reject(new Error(`compaction failed: ${result.error}`));
      else reject(error ?? new Error(`compaction worker exited with code ${code} and no result`));
    });
  });
}

export interface CompactorOptions {
  dir: string;
  fileName: string;
  logger: Logger;
  /** After the snapshot holds `segments`: delete them. */
  onCompacted: (segments: string[], result: CompactionDone) => Promise<void>;
}

/**
 * Runs compactions one at a time over the closed segments queued so far. A failed compaction keeps
 * its segments queued (they are retried with the next closed segment or `drain`); nothing is lost,
 * the journal just grows.
 */
export class Compactor {
  private queue: string[] = [];
  private running: Promise<void> | null = null;
  private stopped = false;
  completed = 0;

  constructor(private readonly opts: CompactorOptions) {}

  get pending(): number {
    return this.queue.length;
  }

  enqueue(segments: readonly string[]): void {
    for (const s of segments) if (!this.queue.includes(s)) this.queue.push(s);
    this.kick().catch(() => {});
  }

  /** Compacts everything queued; rejects if a compaction fails. */
  drain(): Promise<void> {
    return this.kick();
  }

  /** No new compactions; waits for the running one (and its segment deletion). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running?.catch(() => {});
  }

  private kick(): Promise<void> {
    if (!this.running && !this.stopped && this.queue.length > 0) {
      const run = this.loop();
      this.running = run;
      run.then(
        () => {
          if (this.running === run) this.running = null;
        },
        () => {
          if (this.running === run) this.running = null;
        },
      );
    }
    return this.running ?? Promise.resolve();
  }

  private async loop(): Promise<void> {
    while (this.queue.length > 0 && !this.stopped) {
      const segments = this.queue.slice();
      const started = Date.now();
      let result: CompactionDone;
      try {
        result = await runCompactionWorker({ dir: this.opts.dir, fileName: this.opts.fileName, segments });
      } catch (err) {
        this.opts.logger.error('store.compaction_failed', {
          segments: segments.map((s) => path.basename(s)),
          error: err instanceof Error ? err.message : String(err),
        });
        throw err;
      }
      for (const failure of result.failures) {
        this.opts.logger.error('store.replay_record_failed', { seq: failure.seq, error: failure.message, in: 'compaction' });
      }
      await this.opts.onCompacted(segments, result);
      this.queue = this.queue.filter((s) => !segments.includes(s));
      this.completed++;
      this.opts.logger.info('store.compacted', {
        segments: segments.length,
        seq: result.seq,
        snapshot_bytes: result.snapshotBytes,
        ms: Date.now() - started,
      });
    }
  }
}
