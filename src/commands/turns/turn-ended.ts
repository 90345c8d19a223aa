import type { TurnFailure } from '../../agent/turn-failure';
import type { TurnEndedEvent } from '../../protocol';
import { canAccess, sourceText, type Source } from '../../protocol/sources';
import type { Store } from '../../store';
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
    ...(turn.outcome === 'failed' && turn.failure ? { error: turn.failure.forSender } : {}),
    ...(turn.outcome === 'failed' && turn.failure?.reason ? { reason: turn.failure.reason, provider: turn.failure.provider } : {}),
  };
  deps.events.broadcast(event, (session) => canAccess(session.source, conversation.source));
}
