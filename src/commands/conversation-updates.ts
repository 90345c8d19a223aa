import type { ConversationActivity } from '../agent/conversation-activity';
import { canAccess } from '../protocol/sources';
import type { Store } from '../store';
import type { EventHub } from './event-hub';
import type { ClientSession } from './session';
import { conversationOf } from './handlers';

/**
 * `conversation.updated`: every client that may see a conversation hears of its row, on each stored
 * message (the agent's onActivity, with the text of the turn's source) and when its state changes (the
 * activity's), so a conversation continued from the phone, a script or a webhook shows live elsewhere.
 */
export function announceConversation(deps: { events: EventHub; store: Store; activity: ConversationActivity }, conversationId: string, source?: string): void {
  // Each stored message announces its conversation: with no one to hear it (no client connected), its row is not read.
  if (!deps.events.reaches('conversation.updated')) return;
  const row = deps.store.conversations.get(conversationId);
  if (!row) return;
  const from = source ?? row.source;
  const filter = (session: ClientSession) => canAccess(session.source, from);
  if (!deps.events.reaches('conversation.updated', filter)) return;
  const event = { event: 'conversation.updated', conversation_id: conversationId, source: from, conversation: conversationOf(row, deps.activity, deps.store) } as const;
  deps.events.broadcast(event, filter);
}
