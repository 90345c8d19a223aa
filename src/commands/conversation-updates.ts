import type { ConversationActivity, ReplyAnnounced } from '../agent/conversation-activity';
import { canAccess } from '../protocol/sources';
import type { ConversationRow, Store } from '../store';
import type { EventHub } from './event-hub';
import type { ClientSession } from './session';
import { conversationOf } from './handlers';

type AnnounceDeps = { events: EventHub; store: Store; activity: ConversationActivity };

/**
 * `conversation.updated`: every client that may see a conversation hears of its row, on each stored
 * message (the agent's onActivity, with the text of the turn's source) and when its state changes (the
 * activity's), so a conversation continued from the phone, a script or a webhook shows live elsewhere.
 */
export function announceConversation(deps: AnnounceDeps, conversationId: string, source?: string): void {
  // Each stored message announces its conversation: with no one to hear it (no client connected), its row is not read.
  if (!deps.events.reaches('conversation.updated')) return;
  const row = deps.store.conversations.get(conversationId);
  if (!row) return;
  broadcastRow(deps, row, source ?? row.source);
}

/**
 * The activity's announcement: a change of state (the conversation's source), or a turn's end that stored
 * a reply (`reply`: one row for both, with the turn's source). Who hears a change of state but not the
 * turn's source (a webhook account whose conversation a person continued) hears it with the
 * conversation's, as it would have alone.
 */
export function announceActivity(deps: AnnounceDeps, conversationId: string, reply?: ReplyAnnounced): void {
  if (!deps.events.reaches('conversation.updated')) return;
  const row = deps.store.conversations.get(conversationId);
  if (!row) return;
  const from = reply?.source ?? row.source;
  broadcastRow(deps, row, from);
  if (reply?.stateChanged && from !== row.source) broadcastRow(deps, row, row.source, (session) => !canAccess(session.source, from));
}

function broadcastRow(deps: AnnounceDeps, row: ConversationRow, from: string, also: (session: ClientSession) => boolean = () => true): void {
  const filter = (session: ClientSession) => canAccess(session.source, from) && also(session);
  if (!deps.events.reaches('conversation.updated', filter)) return;
  const event = { event: 'conversation.updated', conversation_id: row.id, source: from, conversation: conversationOf(row, deps.activity, deps.store) } as const;
  deps.events.broadcast(event, filter);
}
