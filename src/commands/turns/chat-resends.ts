import { ServiceError, type CommandOf, type ResultOf } from '../../protocol';
import { clientKeyOf, type MessageRow, type Store } from '../../store';
import { personOf, type ClientSession } from '../session';
import { wellFormed } from '../../protocol/code-points';

/** Settled chats remembered in memory (beyond them, the store answers: a stored reply, or `interrupted`). */
export const REMEMBERED_CHATS = 1000;
/**
 * Characters (messages and replies) the settled chats remembered may hold: beyond them the oldest settled
 * are forgotten, as beyond REMEMBERED_CHATS. A thousand chats of a full frame's text held a GiB or two (s36).
 */
export const REMEMBERED_CHARS = 8 * 1024 * 1024;

type ChatResult = ResultOf<'chat'>;

interface Sent {
  message: string;
  conversationId: string | undefined;
  result: Promise<ChatResult>;
  /** Its message's and, once settled, its reply's characters (counted in `kept`); undefined while it runs. */
  settledChars?: number;
}

/**
 * Chats sent with a client_message_id, so a resend (the answer was lost with the connection, the outbox
 * sent it again) is answered with the original result instead of being stored and run twice
 * (docs/protocol.md, "Resending a chat"). In memory: chats running (a resend waits for the same result)
 * and recently settled; in the store: the user message carries the same key, so after a restart a resend
 * is answered with the stored reply, or `interrupted` when the restart cut its turn short (a message
 * whose metadata went cold, docs/design.md "Cold metadata", is looked for in history.db).
 */
export class ChatResends {
  private readonly sent = new Map<string, Sent>();
  /** The characters the settled chats remembered hold (their `settledChars`). */
  private kept = 0;
  /** Chats waiting for the cold lookups before theirs (inOrder), and the end of that line. */
  private waiting = 0;
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly store: Store) {}

  /**
   * One sender's id: the same person (personOf) resends, on any socket or transport; another person's
   * id is its own (a password user resending another's id gets a chat of its own, never their answer).
   */
  static keyOf(session: ClientSession, clientMessageId: string): string {
    return clientKeyOf(personOf(session), clientMessageId);
  }

  /** Runs a chat once: a chat without client_message_id always runs; a resend gets the original result. */
  once(command: CommandOf<'chat'>, session: ClientSession, run: () => Promise<ChatResult>): Promise<ChatResult> {
    if (command.client_message_id === undefined) return this.inOrder(undefined, run);
    const key = ChatResends.keyOf(session, command.client_message_id);
    const sent = this.sent.get(key);
    if (sent) {
      requireSame(command, sent.message, sent.conversationId);
      return unlessDeleted(this.store, sent.result);
    }
    // Decided now (metadata in sql.js), so a resend racing this one cannot run the chat a second time.
    if (this.store.messages.hasClientKey(key)) return this.storedResult(key, command);
    // A message whose metadata went cold is looked for in history.db (one indexed read) before the chat
    // may run; remembered at once, so a resend racing this one waits for the same result.
    const lookup = this.store.messages.hasColdMessages() ? this.store.messages.byClientKey(key) : undefined;
    const result = this.inOrder(lookup, (stored) => (stored ? this.answerOf(stored, command) : run()));
    this.remember(key, command, result);
    return result;
  }

  /**
   * Starts a chat after the cold lookups of the chats before it (a lookup is a round trip to the history
   * worker): chats start in the order they came, as they did when every decision was synchronous.
   */
  private inOrder(lookup: Promise<MessageRow | undefined> | undefined, start: (stored: MessageRow | undefined) => Promise<ChatResult>): Promise<ChatResult> {
    if (lookup === undefined && this.waiting === 0) return start(undefined);
    this.waiting += 1;
    return new Promise<ChatResult>((resolve, reject) => {
      this.tail = this.tail
        .then(() => lookup)
        .then((stored) => resolve(start(stored)), reject)
        .finally(() => {
          this.waiting -= 1;
        });
    });
  }

  private async storedResult(key: string, command: CommandOf<'chat'>): Promise<ChatResult> {
    const stored = await this.store.messages.byClientKey(key);
    if (!stored) throw new ServiceError('not_found', 'the conversation of this message was deleted');
    return this.answerOf(stored, command);
  }

  /** What a resend of a stored user message gets: its turn's reply, or `interrupted` when its turn was cut short. */
  private answerOf(stored: MessageRow, command: CommandOf<'chat'>): Promise<ChatResult> {
    requireSame(command, stored.content, stored.conversation_id);
    return storedAnswer(this.store, stored);
  }

  /**
   * Remembers a new chat's result. A chat refused before its message was stored (not_found...) is
   * forgotten, so a resend runs it; any other outcome (answered, cancelled, removed from the queue,
   * failed after storing) is what a resend gets.
   */
  private remember(key: string, command: CommandOf<'chat'>, result: Promise<ChatResult>): void {
    const entry: Sent = { message: command.message, conversationId: command.conversation_id, result };
    this.sent.set(key, entry);
    const settle = (reply: string) => {
      if (this.sent.get(key) !== entry) return;
      entry.settledChars = entry.message.length + reply.length;
      this.kept += entry.settledChars;
    };
    result.then(
      (answer) => {
        settle(answer.response);
        this.trim();
      },
      () => {
        if (!this.store.messages.hasClientKey(key) && this.sent.get(key) === entry) this.forget(key);
        else settle('');
        this.trim();
      },
    );
  }

  /**
   * Past REMEMBERED_CHATS, the oldest are forgotten; past REMEMBERED_CHARS, the oldest settled ones (a chat
   * still running or waiting in line stays: its message is not stored yet, so only memory tells its resend).
   */
  private trim(): void {
    forgetOldest(this.sent, REMEMBERED_CHATS, (key) => this.forget(key));
    for (const [key, entry] of this.sent) {
      if (this.kept <= REMEMBERED_CHARS) break;
      if (entry.settledChars !== undefined) this.forget(key);
    }
  }

  private forget(key: string): void {
    this.kept -= this.sent.get(key)?.settledChars ?? 0;
    this.sent.delete(key);
  }

  /** What is remembered (tests): chats, and the characters the settled ones hold. */
  remembered(): { chats: number; settledChars: number } {
    return { chats: this.sent.size, settledChars: this.kept };
  }
}

/**
 * What a resend finds after a restart, for a stored user message (a chat's, or the one a retry answered):
 * its turn's reply, or `interrupted` when the restart cut its turn short (nothing is run again).
 */
export async function storedAnswer(store: Store, message: MessageRow): Promise<ChatResult> {
  const reply = await store.messages.replyTo(message);
  return reply ? { response: reply.content, conversation_id: message.conversation_id } : { response: '', conversation_id: message.conversation_id, interrupted: true as const };
}

/**
 * A result remembered in memory, as a resend gets it: `not_found` once its conversation was deleted
 * (delete_conversation, the history's retention), as the store answers after a restart, so a deleted reply
 * is never given again. Checked when the result is given, not by forgetting at the deletion: a chat still
 * running when its conversation is deleted settles after it.
 */
export async function unlessDeleted(store: Store, remembered: Promise<ChatResult>): Promise<ChatResult> {
  const result = await remembered;
  if (store.conversations.get(result.conversation_id) === undefined) throw new ServiceError('not_found', 'the conversation of this message was deleted');
  return result;
}

/** Keeps the `bound` newest entries: the oldest go first (a Map keeps insertion order; running ones are far fewer than the bound). */
export function forgetOldest(sent: Map<string, unknown>, bound: number, forget: (key: string) => void = (key) => sent.delete(key)): void {
  for (const old of sent.keys()) {
    if (sent.size <= bound) break;
    forget(old);
  }
}

function requireSame(command: CommandOf<'chat'>, message: string, conversationId: string | undefined): void {
  const sameConversation = command.conversation_id === undefined || conversationId === undefined || command.conversation_id === conversationId;
  // As stored (well-formed: store/messages.ts checkMessage): a resend of a text with a lone surrogate is the same message.
  if (wellFormed(command.message) !== wellFormed(message) || !sameConversation) {
    throw new ServiceError('invalid_request', 'client_message_id was already used for a different message: make a new id for each message');
  }
}
