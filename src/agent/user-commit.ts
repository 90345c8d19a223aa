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
  /** The turn ended without waiting for the message to be durable (durableOrCancelled). */
  private turnOver = false;

  constructor(
    /** The message's record is in the journal's file (or, behind a full disk's owed records, durable). */
    readonly written: Promise<void>,
    durable: Promise<void>,
    private readonly sync: () => void,
    /** The message is durable: tell it (`turnOver`: to everyone but the turn's own sink, which has ended). */
    tell: (turnOver: boolean) => void,
  ) {
    this.told = durable.then(() => {
      tell(this.turnOver);
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

  /**
   * `durable()` for a turn that is ending anyway (its catch path): resolves as well if `signal` aborts
   * while it waits, so a turn stuck on a sync that does not come (a hung disk) ends when cancelled (by
   * its sender, or by the service's stop after its grace): its conversation's queue and the stop would
   * wait with it. A turn cancelled before waits as usual: its sync was just asked and normally comes at
   * once, and its user message is then told before the turn's end. Given up, the turn's held events are
   * dropped and its user message, once durable, is announced but no longer sent to the turn's sink.
   */
  durableOrCancelled(signal: AbortSignal | undefined): Promise<void> {
    const told = this.durable();
    if (!signal || signal.aborted || !this.held) return told;
    const cancelled = new Promise<void>((resolve) => {
      const giveUp = () => {
        this.turnOver = true;
        this.held = [];
        resolve();
      };
      signal.addEventListener('abort', giveUp, { once: true });
      const done = () => signal.removeEventListener('abort', giveUp);
      told.then(done, done);
    });
    return Promise.race([told, cancelled]);
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
