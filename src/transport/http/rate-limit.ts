/**
 * Counts events per key in fixed windows. Used for failed logins per address and webhook requests per
 * account. Keys are kept oldest first (a window is inserted when it starts), so ended windows are swept
 * from the front; at most `maxKeys` are kept, so a flood from many addresses cannot grow memory.
 */
export const MAX_LIMITED_KEYS = 4096;

export class FixedWindowLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = MAX_LIMITED_KEYS,
  ) {}

  /** Keys with a window kept now (expired ones may linger until the next sweep). */
  get size(): number {
    return this.windows.size;
  }

  /** Seconds until `key` may try again, or 0 when it is under the limit. */
  retryAfterSeconds(key: string): number {
    const window = this.current(key);
    if (!window || window.count < this.limit) return 0;
    return Math.max(1, Math.ceil((window.start + this.windowMs - this.now()) / 1000));
  }

  /** Records one event; returns the seconds to wait when this event went over the limit, else 0. */
  hit(key: string): number {
    let window = this.current(key);
    if (!window) {
      this.makeRoom();
      window = { start: this.now(), count: 0 };
      this.windows.set(key, window);
    }
    window.count += 1;
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

  /**
   * Drops ended windows (from the front: they are oldest first), then, when still full, the oldest key
   * under the limit: a flood of new keys forgets those that could still try, never one it locked out
   * (only when every kept key is locked does the oldest go).
   */
  private makeRoom(): void {
    const now = this.now();
    for (const [key, window] of this.windows) {
      if (now - window.start < this.windowMs) break;
      this.windows.delete(key);
    }
    if (this.windows.size < this.maxKeys) return;
    for (const [key, window] of this.windows) {
      if (window.count < this.limit) {
        this.windows.delete(key);
        return;
      }
    }
    const oldest = this.windows.keys().next().value;
    if (oldest !== undefined) this.windows.delete(oldest);
  }
}
