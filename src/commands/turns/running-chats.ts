import type { RequestId } from '../../protocol';

/** Chats in progress per session and request id, and per conversation, so `cancel` can stop them. */
export class RunningChats {
  private readonly controllers = new Map<string, AbortController>();
  private readonly byConversation = new Map<string, Set<AbortController>>();
  /** Waiting for a conversation's running turns to end (idle). */
  private readonly idleWaiters = new Map<string, (() => void)[]>();
  private anonymous = 0;

  private static key(sessionId: string, requestId: RequestId) {
    return `${sessionId}\u0000${typeof requestId}:${requestId}`;
  }

  /**
   * A chat starts. `attach` names its conversation once its turn runs (not while queued behind another),
   * so any client may cancel it by conversation.
   */
  start(sessionId: string, requestId: RequestId | undefined): { signal: AbortSignal; done: () => void; attach: (conversationId: string) => void } {
    const controller = new AbortController();
    // A chat without an id cannot be cancelled by its client, but is still stopped by cancelAll. A second
    // request under an id that runs (refused later, or a client reusing ids) leaves the first's handle
    // alone: `cancel {id}` still stops the first (review25b: the refused one's `done` took it away).
    const running = requestId === undefined ? undefined : RunningChats.key(sessionId, requestId);
    const key = running === undefined || this.controllers.has(running) ? `${sessionId}\u0001${(this.anonymous += 1)}` : running;
    this.controllers.set(key, controller);
    let attached: string | undefined;
    const attach = (id: string) => {
      attached = id;
      let set = this.byConversation.get(id);
      if (!set) this.byConversation.set(id, (set = new Set()));
      set.add(controller);
    };
    const done = () => {
      if (attached !== undefined) {
        const set = this.byConversation.get(attached);
        set?.delete(controller);
        if (set?.size === 0) {
          this.byConversation.delete(attached);
          for (const resolve of this.idleWaiters.get(attached) ?? []) resolve();
          this.idleWaiters.delete(attached);
        }
      }
      return this.controllers.get(key) === controller && this.controllers.delete(key);
    };
    return { signal: controller.signal, done, attach };
  }

  cancel(sessionId: string, requestId: RequestId): boolean {
    const controller = this.controllers.get(RunningChats.key(sessionId, requestId));
    controller?.abort();
    return controller !== undefined;
  }

  /** Stops the conversation's running turns, whoever started them; false when none runs. */
  cancelConversation(conversationId: string): boolean {
    const running = [...(this.byConversation.get(conversationId) ?? [])].filter((c) => !c.signal.aborted);
    for (const controller of running) controller.abort();
    return running.length > 0;
  }

  /** Settles once none of the conversation's turns runs (at once when none does). */
  idle(conversationId: string): Promise<void> {
    if (!this.byConversation.has(conversationId)) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.idleWaiters.get(conversationId) ?? [];
      waiters.push(resolve);
      this.idleWaiters.set(conversationId, waiters);
    });
  }

  /** Stops every running chat (the service is stopping and the grace period is over). */
  cancelAll(): void {
    for (const controller of this.controllers.values()) controller.abort();
  }

  get size(): number {
    return this.controllers.size;
  }
}
