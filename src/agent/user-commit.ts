/**
 * A turn's user message while its commit runs (Agent.chat). The model may be asked once the message's
 * journal record is `written` (in the file: a process killed from then on cannot lose it, so a resend
 * after a restart finds it and nothing runs twice), so the commit's fdatasync runs while the request is
 * made and sent. Nothing of the turn reaches anyone before the message is durable: `told` settles once
 * it is and its own event went out (or with the commit's failure, which is then the turn's); the reply's
 * pieces streamed meanwhile wait here and follow that event in order; tools, stored messages and the
 * answer wait for `told` (agent.ts).
 */
export class UserCommit {
  readonly told: Promise<void>;
  private held: string[] | undefined = [];
  private sink: (delta: string) => void = () => undefined;

  constructor(
    readonly written: Promise<void>,
    durable: Promise<void>,
    tell: () => void,
  ) {
    this.told = durable.then(() => {
      tell();
      const held = this.held ?? [];
      this.held = undefined;
      for (const delta of held) this.sink(delta);
    });
    // Awaited by the turn; these only keep a failed commit from counting as unhandled meanwhile.
    this.told.catch(() => undefined);
    written.catch(() => undefined);
  }

  /** The reply's pieces for `onDelta`: passed on once the user message is told, held until then. */
  deltasTo(onDelta: (delta: string) => void): (delta: string) => void {
    this.sink = onDelta;
    return (delta) => {
      if (this.held) this.held.push(delta);
      else onDelta(delta);
    };
  }
}
