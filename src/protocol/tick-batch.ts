/**
 * Messages sent within one turn of the sender's loop go on as one: each message costs the loop that takes
 * it (the extension host's, which every extension shares: a crossing of the service thread's port, a
 * webview postMessage, one VS Code RPC message compressed in remote windows), and a chat's end is several
 * at once (its reply, the conversation's row, turn.ended, the chat's response). They go at the next
 * macrotask (setImmediate): nothing waits behind a timer, a response or a permission request no later than
 * the rest of what the loop is doing. Order is kept: `out` gets them as they were pushed.
 * docs/design.md, "Posts joined per tick".
 */
export class TickBatch<T> {
  private pending: T[] = [];
  private scheduled: ReturnType<typeof setImmediate> | undefined;

  constructor(private readonly out: (messages: T[]) => void) {}

  push(message: T): void {
    this.pending.push(message);
    this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Sends what waits now (before a message that does not go in a batch, so that it keeps its place). */
  flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    if (this.pending.length === 0) return;
    const messages = this.pending;
    this.pending = [];
    this.out(messages);
  }
}
