import type { RequestId } from '../protocol';

/** Chats in progress per session and request id, so `cancel` can stop them. */
export class RunningChats {
  private readonly controllers = new Map<string, AbortController>();
  private anonymous = 0;

  private static key(sessionId: string, requestId: RequestId) {
    return `${sessionId}\u0000${typeof requestId}:${requestId}`;
  }

  start(sessionId: string, requestId: RequestId | undefined): { signal: AbortSignal; done: () => void } {
    const controller = new AbortController();
    // A chat without an id cannot be cancelled by its client, but is still stopped by cancelAll.
    const key = requestId === undefined ? `${sessionId}\u0001${(this.anonymous += 1)}` : RunningChats.key(sessionId, requestId);
    this.controllers.set(key, controller);
    return { signal: controller.signal, done: () => this.controllers.get(key) === controller && this.controllers.delete(key) };
  }

  cancel(sessionId: string, requestId: RequestId): boolean {
    const controller = this.controllers.get(RunningChats.key(sessionId, requestId));
    controller?.abort();
    return controller !== undefined;
  }

  /** Stops every running chat (the service is stopping and the grace period is over). */
  cancelAll(): void {
    for (const controller of this.controllers.values()) controller.abort();
  }

  get size(): number {
    return this.controllers.size;
  }
}
