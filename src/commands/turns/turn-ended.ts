import type { TurnFailure } from '../../agent/turn-failure';
import type { TurnEndedEvent } from '../../protocol';
import { canAccess, sourceText, type Source } from '../../protocol/sources';
import type { Store } from '../../store';
import type { Logger } from '../../log/logger';
import type { EventHub } from '../event-hub';

export interface EndedTurn {
  conversationId: string;
  /** Where the turn came from (the session's source). */
  source: Source;
  outcome: TurnEndedEvent['outcome'];
  /** The user message the turn answered (undefined when it stored none). */
  messageId?: string;
  /** What made it fail (outcome `failed`): told as its kind and status only (agent/turn-failure.ts). */
  failure?: TurnFailure;
  /** Answered: the instruction files in force after it, and its file writes (ChatOutput's). */
  instructions?: string;
  filesWritten?: number;
}

/** The fields `turn.ended` gives of a failure (its kind and status only, and the reason and provider of a provider's). */
function failureFields(turn: EndedTurn): Pick<TurnEndedEvent, 'error' | 'reason' | 'provider'> {
  if (turn.outcome !== 'failed' || !turn.failure) return {};
  return { error: turn.failure.forSender, ...(turn.failure.reason ? { reason: turn.failure.reason, provider: turn.failure.provider } : {}) };
}

/**
 * A turn that left its user message unanswered (failed or stopped): why, kept on the conversation for a page
 * drawn afresh (get_messages' `unanswered`). A turn that answered writes nothing (not on every turn's
 * path). Not kept (a full disk): the page says "not answered", as before; the turn's end is not held up.
 */
export async function keepUnanswered(deps: { store: Store; logger?: Logger }, turn: EndedTurn): Promise<void> {
  if (turn.outcome === 'answered' || turn.messageId === undefined) return;
  try {
    await deps.store.conversations.setUnanswered(turn.conversationId, { message_id: turn.messageId, outcome: turn.outcome, ...failureFields(turn) });
  } catch (err) {
    deps.logger?.warn('turn.unanswered_not_kept', { conversation: turn.conversationId, error: err instanceof Error ? err.message : String(err) });
  }
}

/**
 * `turn.ended` to every user client (and to a webhook account for its own conversations, as
 * conversation.updated): the phone learns that a run it did not start finished, and the push notifier,
 * tapping the hub, tells the devices. A conversation deleted meanwhile has nobody to tell.
 */
export function announceTurnEnded(deps: { events: EventHub; store: Store }, turn: EndedTurn): void {
  const conversation = deps.store.conversations.get(turn.conversationId);
  if (!conversation) return;
  const event: TurnEndedEvent = {
    event: 'turn.ended',
    conversation_id: turn.conversationId,
    source: sourceText(turn.source),
    outcome: turn.outcome,
    ...(turn.messageId !== undefined ? { message_id: turn.messageId } : {}),
    ...failureFields(turn),
    ...(turn.instructions !== undefined ? { instructions: turn.instructions } : {}),
    ...(turn.filesWritten !== undefined ? { files_written: turn.filesWritten } : {}),
  };
  deps.events.broadcast(event, (session) => canAccess(session.source, conversation.source));
}
