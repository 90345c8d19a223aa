/**
 * Counts events per key in fixed windows. Used for failed logins per address and webhook requests per
 * account. Old windows are swept lazily, so memory stays bounded by the keys active in one window.
 */
export class FixedWindowLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until `key` may try again, or 0 when it is under the limit. */
  retryAfterSeconds(key: string): number {
    const window = this.current(key);
    if (!window || window.count < this.limit) return 0;
    return Math.max(1, Math.ceil((window.start + this.windowMs - this.now()) / 1000));
  }

  /** Records one event; returns the seconds to wait when this event went over the limit, else 0. */
  hit(key: string): number {
    this.sweep();
    const window = this.current(key) ?? { start: this.now(), count: 0 };
    window.count += 1;
    this.windows.set(key, window);
    return window.count > this.limit ? this.retryAfterSeconds(key) : 0;
  }

  /**
   * Counts one attempt now (synchronously, so parallel requests cannot all slip under the limit) and
   * hands back a refund for an attempt that turns out not to count (a successful login). The refund
   * only touches the window it was taken from.
   */
  reserve(key: string): { retryAfterSeconds: number; refund(): void } {
    const retryAfterSeconds = this.hit(key);
    const window = this.windows.get(key)!;
    let refunded = retryAfterSeconds > 0;
    return {
      retryAfterSeconds,
      refund: () => {
        if (refunded) return;
        refunded = true;
        if (this.windows.get(key) === window && window.count > 0) window.count -= 1;
      },
    };
  }

  private current(key: string) {
    const window = this.windows.get(key);
    if (window && this.now() - window.start >= this.windowMs) {
      this.windows.delete(key);
      return undefined;
    }
    return window;
  }

  private sweep(): void {
    if (this.windows.size < 1024) return;
    for (const key of [...this.windows.keys()]) this.current(key);
  }
}
