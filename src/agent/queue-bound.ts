import { MAX_QUEUED_CHARS_PER_PERSON, MAX_QUEUED_MESSAGES_PER_PERSON, ServiceError } from '../protocol';

interface Held {
  messages: number;
  chars: number;
}

/**
 * What each person's chats waiting in line hold (count, characters of text and context), all conversations
 * together: a chat beyond the bound is refused `rate_limited` before it waits, nothing counted. Only chats
 * are counted: a webhook message waiting is already stored (its inbox row) and its account bounded a minute.
 */
export class QueueBound {
  private readonly people = new Map<string, Held>();

  constructor(
    private readonly maxMessages = MAX_QUEUED_MESSAGES_PER_PERSON,
    private readonly maxChars = MAX_QUEUED_CHARS_PER_PERSON,
  ) {}

  /** Counts a waiting chat of `person`, or throws rate_limited; the returned release uncounts it (once). */
  take(person: string, chars: number): () => void {
    const held = this.people.get(person) ?? { messages: 0, chars: 0 };
    if (held.messages >= this.maxMessages) {
      throw new ServiceError('rate_limited', `${held.messages} of your messages are already waiting for running turns (at most ${this.maxMessages}): wait for them to start, or remove one`);
    }
    if (held.chars + chars > this.maxChars) {
      const room = this.maxChars - held.chars;
      throw new ServiceError(
        'rate_limited',
        `your messages waiting for running turns already hold ${held.chars} characters, and this one ${chars} (at most ${this.maxChars} together, ${room} left): wait for them to start, or remove one`,
      );
    }
    held.messages += 1;
    held.chars += chars;
    this.people.set(person, held);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      held.messages -= 1;
      held.chars -= chars;
      if (held.messages === 0) this.people.delete(person);
    };
  }
}
