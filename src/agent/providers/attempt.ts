/**
 * One try at a provider request: aborts when the caller's signal does, or when nothing has arrived for
 * `timeoutMs` (the watchdog is re-armed by touch() on every chunk), so a stalled stream ends as a
 * timeout rather than hanging. Used by every HTTP provider through http-provider.ts.
 */
export class Attempt {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  timedOut = false;

  constructor(
    private readonly outer: AbortSignal | undefined,
    private readonly timeoutMs: number,
  ) {
    outer?.addEventListener('abort', this.onOuterAbort, { once: true });
    if (outer?.aborted) this.controller.abort();
    this.touch();
  }

  private readonly onOuterAbort = () => this.controller.abort();

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The caller cancelled (as opposed to the watchdog firing). */
  get cancelled(): boolean {
    return this.outer?.aborted === true;
  }

  touch(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort();
    }, this.timeoutMs);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.outer?.removeEventListener('abort', this.onOuterAbort);
  }
}
