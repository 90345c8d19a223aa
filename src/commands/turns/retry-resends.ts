import { ServiceError, type CommandOf, type ResultOf } from '../../protocol';
import type { RetryKey, Store } from '../../store';
import type { ClientSession } from '../session';
import { ChatResends, forgetOldest, REMEMBERED_CHATS, storedAnswer, unlessDeleted } from './chat-resends';

type ChatResult = ResultOf<'chat'>;

interface Sent extends RetryKey {
  result: Promise<ChatResult>;
}

/**
 * Retries sent with a client_retry_id, so a resend (the answer was lost with the connection) gets the
 * first one's result, never a second run of the model (docs/protocol.md, "Retrying a turn"). In memory,
 * the last REMEMBERED_CHATS: running ones (a resend waits for the same result) and settled ones. In the
 * store (store/retry-keys.ts), the key with the message it retried, written before the model is asked
 * (Agent.retry): after a restart a resend gets the message's reply, or `interrupted` when the restart cut
 * the retry short, as a chat's resend does (chat-resends.ts).
 */
export class RetryResends {
  private readonly sent = new Map<string, Sent>();

  constructor(private readonly store: Store) {}

  /**
   * Runs a retry once: without client_retry_id it always runs; a resend by the same person gets the first
   * one's result. `run` is given the key to store with the retry once its checks pass.
   */
  once(command: CommandOf<'retry_turn'>, session: ClientSession, run: (retryKey: string | undefined) => Promise<ChatResult>): Promise<ChatResult> {
    if (command.client_retry_id === undefined) return run(undefined);
    // The same person on any socket or transport; another person's id is its own.
    const key = ChatResends.keyOf(session, command.client_retry_id);
    const sent = this.sent.get(key);
    if (sent) {
      requireSame(command, sent);
      return unlessDeleted(this.store, sent.result);
    }
    const stored = this.store.retryKeys.get(key);
    if (stored) {
      requireSame(command, stored);
      return this.storedResult(stored);
    }
    const result = run(key);
    this.sent.set(key, { conversation_id: command.conversation_id, message_id: command.message_id, result });
    const trim = () => forgetOldest(this.sent, REMEMBERED_CHATS);
    result.then(trim, () => {
      // Refused before its turn began (a running turn, answered, unknown ids): nothing stored, a resend asks again.
      if (this.store.retryKeys.get(key) === undefined && this.sent.get(key)?.result === result) this.sent.delete(key);
      trim();
    });
    return result;
  }

  /** A retry stored before a restart (or beyond the memory's bound): the message's reply, or `interrupted`. */
  private async storedResult(stored: RetryKey): Promise<ChatResult> {
    const message = await this.store.messages.get(stored.message_id);
    if (!message) throw new ServiceError('not_found', 'the conversation of this message was deleted');
    return storedAnswer(this.store, message);
  }
}

function requireSame(command: CommandOf<'retry_turn'>, sent: RetryKey): void {
  if (sent.conversation_id !== command.conversation_id || sent.message_id !== command.message_id) {
    throw new ServiceError('invalid_request', 'client_retry_id was already used for a retry of another message: make a new id for each retry');
  }
}
