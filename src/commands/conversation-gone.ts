import { canAccess } from '../protocol/sources';
import type { EventHub } from './event-hub';

/** What the service keeps of a conversation in memory, each part dropped when it is deleted. */
export interface ConversationHolders {
  events: EventHub;
  agent: { forget(conversationId: string): void };
  gate: { forget(conversationId: string): void };
  exports: { forget(conversationId: string): void };
}

/**
 * A conversation was deleted (delete_conversation, or the history's retention: history/maintenance.ts):
 * what is held of it in memory goes (its permission rules of the session, its history cache, its feed,
 * its rendered exports), and every client that may see it hears `conversation.deleted`, so no list keeps
 * a conversation that is gone. `source`: the conversation's, which says who may see it.
 */
export function conversationGone(deps: ConversationHolders, conversation: { id: string; source: string }, by: 'user' | 'retention'): void {
  const { id } = conversation;
  deps.gate.forget(id);
  deps.agent.forget(id);
  deps.events.feeds.forget(id);
  deps.exports.forget(id);
  deps.events.broadcast({ event: 'conversation.deleted', conversation_id: id, by }, (session) => canAccess(session.source, conversation.source));
}
