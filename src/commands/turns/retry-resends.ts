import { ServiceError, type CommandOf, type ResultOf } from '../../protocol';
import { personOf, type ClientSession } from '../session';
import { forgetOldest, REMEMBERED_CHATS } from './chat-resends';

type ChatResult = ResultOf<'chat'>;

interface Sent {
  conversationId: string;
  messageId: string;
  result: Promise<ChatResult>;
}

/**
 * Retries sent with a client_retry_id, so a resend (the answer was lost with the connection) gets the
 * first one's result, never a second run of the model (docs/protocol.md, "Retrying a turn"). In memory
 * only, the last REMEMBERED_CHATS: nothing is stored for a retry before its reply, and after a restart
 * the conversation says what happened (answered: `conflict`; not: it may run).
 */
export class RetryResends {
  private readonly sent = new Map<string, Sent>();

  /** Runs a retry once: without client_retry_id it always runs; a resend by the same person gets the first one's result. */
  once(command: CommandOf<'retry_turn'>, session: ClientSession, run: () => Promise<ChatResult>): Promise<ChatResult> {
    if (command.client_retry_id === undefined) return run();
    // The same person on any socket or transport; another person's id is its own.
    const key = `${personOf(session)}\u0000${command.client_retry_id}`;
    const sent = this.sent.get(key);
    if (sent) {
      if (sent.conversationId !== command.conversation_id || sent.messageId !== command.message_id) {
        throw new ServiceError('invalid_request', 'client_retry_id was already used for a retry of another message: make a new id for each retry');
      }
      return sent.result;
    }
    const result = run();
    this.sent.set(key, { conversationId: command.conversation_id, messageId: command.message_id, result });
    const trim = () => forgetOldest(this.sent, REMEMBERED_CHATS);
    result.then(trim, (error: unknown) => {
      // Refused before its turn began (a running turn, answered, unknown ids): a resend asks again.
      if (error instanceof ServiceError && error.code !== 'server_error' && this.sent.get(key)?.result === result) this.sent.delete(key);
      trim();
    });
    return result;
  }
}
