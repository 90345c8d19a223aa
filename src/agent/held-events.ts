/**
 * A turn's events held back until its user message is durable (agent.ts `chat`: the model is asked while
 * the message's fsync runs), then passed on in the order they came; after `release`, passed on at once.
 * No client hears of a turn whose message a crash could still lose.
 */
export class HeldEvents<E> {
  private held: E[] | null = [];

  constructor(private readonly onEvent: (event: E) => void) {}

  readonly sink = (event: E): void => {
    if (this.held) this.held.push(event);
    else this.onEvent(event);
  };

  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const event of held) this.onEvent(event);
  }
}
