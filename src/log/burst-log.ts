import type { Logger } from './logger';

/**
 * Addresses whose failures are counted apart in one log window; failures from further addresses are
 * counted together as `other addresses`, so a flood from many addresses writes a bounded log too.
 */
export const MAX_LOGGED_ADDRESSES = 256;
const OTHER_ADDRESSES = 'other addresses';

/** What a failure is counted under: its address (`other addresses` past MAX_LOGGED_ADDRESSES) and what else tells bursts apart. */
export type BurstLabels = { address: string } & Record<string, string>;

/** One log window's failures with the same labels. */
export type Burst<L extends BurstLabels> = L & {
  /** Failures in the window, those refused unchecked (over a limit) included. */
  count: number;
  /** Of `count`, those refused without being checked. */
  refused: number;
  window_seconds: number;
  /** When the window started (ISO 8601). */
  since: string;
};

export interface BurstLogEvents<L extends BurstLabels> {
  /** The event of a window's first failure (its fields, the labels, `refused: true` when it was). */
  first: string;
  /** The event of a window's counted line, when it closes with more than one failure. */
  burst: string;
  message: (burst: Burst<L>) => string;
  /** The level of both lines: `warn` unless said (failures a client cannot help, as a body the network cut, say `info`). */
  level?: 'info' | 'warn';
}

interface LogWindow<L extends BurstLabels> {
  labels: L;
  start: number;
  count: number;
  refused: number;
}

/**
 * Logs failures (wrong credentials) without letting a burst overwrite the log: the first failure with
 * some labels in a window is a line, the rest are one counted line when the window ends, also handed to
 * onBurst listeners. Windows are kept oldest first, closed by one timer.
 */
export class BurstLog<L extends BurstLabels> {
  /** Open log windows by labels, oldest first (a new window is re-inserted at the end). */
  private readonly windows = new Map<string, LogWindow<L>>();
  private readonly listeners = new Set<(burst: Burst<L>) => void>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly events: BurstLogEvents<L>,
    private readonly now: () => number,
    private readonly windowMs: number,
  ) {}

  record(labels: L, refused: boolean, fields?: Record<string, unknown>): void {
    this.closeEnded();
    let window = this.windows.get(keyOf(labels));
    if (!window) {
      const tracked = this.windows.size < MAX_LOGGED_ADDRESSES;
      const counted: L = tracked ? labels : { ...labels, address: OTHER_ADDRESSES };
      window = this.windows.get(keyOf(counted));
      if (!window) {
        window = { labels: counted, start: this.now(), count: 0, refused: 0 };
        this.windows.set(keyOf(counted), window);
        this.logger[this.events.level ?? 'warn'](this.events.first, { ...fields, ...counted, ...(refused ? { refused: true } : {}) });
        this.schedule();
      }
    }
    window.count += 1;
    if (refused) window.refused += 1;
  }

  /** Tells `listener` of every log window that had failures, when it closes. Returns the unsubscribe. */
  onBurst(listener: (burst: Burst<L>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Closes every open window now (the service stops): their counts are logged, not lost. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const window of [...this.windows.values()]) this.close(window);
  }

  private closeEnded(): void {
    const now = this.now();
    for (const window of this.windows.values()) {
      if (now - window.start < this.windowMs) break;
      this.close(window);
    }
  }

  private close(window: LogWindow<L>): void {
    this.windows.delete(keyOf(window.labels));
    const burst: Burst<L> = {
      ...window.labels,
      count: window.count,
      refused: window.refused,
      window_seconds: Math.round(this.windowMs / 1000),
      since: new Date(window.start).toISOString(),
    };
    // The window's first failure is already a line; one failure alone needs no second.
    if (burst.count > 1) this.logger[this.events.level ?? 'warn'](this.events.burst, { ...burst, message: this.events.message(burst) });
    for (const listener of this.listeners) {
      try {
        listener(burst);
      } catch (error) {
        this.logger.error(`${this.events.burst}_listener_failed`, { error });
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
      Math.max(0, oldest.start + this.windowMs - this.now()),
    );
    this.timer.unref();
  }
}

function keyOf(labels: BurstLabels): string {
  return JSON.stringify(Object.values(labels));
}
