import type { Logger } from '../log/logger';
import type { RelayAnswer } from './http';
import { MAX_REFUSAL_LOG_ADDRESSES, REFUSAL_LOG_WINDOW_MS } from './limits';

interface Window {
  started: number;
  reason: string;
  /** Refusals since the last line about this address. */
  unlogged: number;
}

/**
 * The log of refused connects, one line per address per window rather than one per refusal (a
 * flood would otherwise write thousands): the first refusal of a window is logged at once
 * (`refused: 1`), the others are counted and logged when the window ends (flush), so the `refused`
 * fields of an address's lines add up to all its refusals. No timer of its own: the deployment calls
 * flush from its periodic work (the Node relay's timer, the Durable Object's alarm).
 */
export class RefusalLog {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly log: Logger,
    private readonly windowMs: number = REFUSAL_LOG_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** A connect from `address` answered with `answer` instead of a socket. */
  refused(address: string, answer: RelayAnswer): void {
    const reason = answer.body.status === 'error' ? answer.body.code : String(answer.status);
    const key = this.windows.has(address) || this.windows.size < MAX_REFUSAL_LOG_ADDRESSES ? address : 'others';
    const window = this.windows.get(key);
    if (!window) {
      this.windows.set(key, { started: this.now(), reason, unlogged: 0 });
      this.write(key, reason, 1);
      return;
    }
    window.unlogged += 1;
    window.reason = reason;
  }

  /** Logs the count of every window that ended; returns when the next one ends (undefined: none open). */
  flush(): number | undefined {
    const now = this.now();
    let next: number | undefined;
    for (const [address, window] of this.windows) {
      if (now - window.started < this.windowMs) {
        next = Math.min(next ?? Infinity, window.started + this.windowMs);
        continue;
      }
      if (window.unlogged === 0) {
        this.windows.delete(address);
        continue;
      }
      this.write(address, window.reason, window.unlogged);
      this.windows.set(address, { started: now, reason: window.reason, unlogged: 0 });
      next = Math.min(next ?? Infinity, now + this.windowMs);
    }
    return next;
  }

  private write(address: string, reason: string, refused: number): void {
    this.log.warn('relay.connects_refused', { address, reason, refused, window_s: this.windowMs / 1000 });
  }
}
