/**
 * A token bucket: `rate` tokens a second up to `burst`. Each frame takes one; without a token the
 * frame is refused. Refilled lazily from the clock, so an idle bucket costs no timer.
 */
export class TokenBucket {
  private tokens: number;
  private updated: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.updated = now();
  }

  /** Takes a token; false when there is none. */
  take(): boolean {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.updated) / 1000) * this.rate);
    this.updated = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
