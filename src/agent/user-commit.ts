/**
 * A turn's user message between its journal record's write and its fdatasync (Agent.chat; docs/design.md,
 * "One durable commit for a 0-tool turn"). The record is written at once but its sync is deferred
 * (Database.write's `deferSync`): the model may be asked once it is `written` (in the file: a process
 * killed from then on cannot lose it, so a resend after a restart finds it and nothing runs twice).
 * Nothing of the turn reaches anyone before the message is durable, and the turn's first outward effect
 * asks for its sync: an event (held here, the first one asks), a tool run, a summary or an error answered
 * (`durable()`), or the reply, whose own commit's fdatasync covers the message written before it. A turn
 * whose model answers before any of those (an instant provider, nobody streaming) costs one sync for both
 * messages. `soon()`: the model was asked; if its answer and the reply's record do not come within this
 * turn of the event loop (a real provider), the sync starts in the background, so the message is durable
 * and told while the model works.
 */
export class UserCommit<E> {
  /** Settles once the message is durable and its own event went out (rejects with its commit's failure). */
  readonly told: Promise<void>;
  private held: E[] | undefined = [];
  private sink: (event: E) => void = () => undefined;
  private asked = false;

  constructor(
    /** The message's record is in the journal's file (or, behind a full disk's owed records, durable). */
    readonly written: Promise<void>,
    durable: Promise<void>,
    private readonly sync: () => void,
    tell: () => void,
  ) {
    this.told = durable.then(() => {
      tell();
      const held = this.held ?? [];
      this.held = undefined;
      for (const event of held) this.sink(event);
    });
    // Awaited by the turn; these only keep a failed commit from counting as unhandled meanwhile.
    this.told.catch(() => undefined);
    written.catch(() => undefined);
  }

  /** The turn's events for `onEvent`: passed on once the message is told; until then held, the first asking for its sync. */
  events(onEvent: (event: E) => void): (event: E) => void {
    this.sink = onEvent;
    return (event) => {
      if (!this.held) return onEvent(event);
      this.held.push(event);
      this.askSync();
    };
  }

  /** Asks for the message's sync (if not asked yet) and resolves once it is durable and told. */
  durable(): Promise<void> {
    this.askSync();
    return this.told;
  }

  /** The model was asked: the sync starts at the loop's next check phase unless something asked it first. */
  soon(): void {
    if (!this.asked) setImmediate(() => this.askSync());
  }

  private askSync(): void {
    if (this.asked || !this.held) return;
    this.asked = true;
    this.sync();
  }
}
