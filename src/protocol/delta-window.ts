import type { ServiceEvent } from './index';

type ChatDelta = Extract<ServiceEvent, { event: 'chat.delta' }>;

/**
 * Stream pieces that arrive within this window go on as one chat.delta: each message costs the loop that
 * takes it (the extension host's, which every extension shares: a crossing of the service thread's port, a
 * webview postMessage), and a fast model sends many small pieces. 16 ms is one frame: the reply looks no
 * less live.
 */
export const DELTA_WINDOW_MS = 16;

/**
 * An event stream with its chat.delta pieces joined: a piece joins the pending one of the same chat (same
 * request id and conversation) and the joined one goes on DELTA_WINDOW_MS after its first piece; any other
 * event, or another chat's piece, sends the pending one first, so the order is kept. `flush` sends it now
 * (before a response that must follow the pieces).
 */
export class DeltaWindow {
  private pending: ChatDelta | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly out: (event: ServiceEvent) => void,
    private readonly windowMs = DELTA_WINDOW_MS,
  ) {}

  push(event: ServiceEvent): void {
    if (event.event !== 'chat.delta') {
      this.flush();
      this.out(event);
      return;
    }
    const pending = this.pending;
    if (pending && pending.id === event.id && pending.conversation_id === event.conversation_id) {
      pending.delta = `${pending.delta}${event.delta}`;
      // The joined piece ends at this one: a view that follows again after it asks from here, not from the first.
      if (event.seq !== undefined) pending.seq = event.seq;
      return;
    }
    this.flush();
    this.pending = { ...event };
    this.timer = setTimeout(() => this.flush(), this.windowMs);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const pending = this.pending;
    this.pending = undefined;
    if (pending) this.out(pending);
  }

  /** Drops the pending piece (its receiver is gone). */
  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = undefined;
  }
}
