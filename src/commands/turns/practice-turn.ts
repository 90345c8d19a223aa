import type { Agent } from '../../agent/agent';
import { ConversationActivity } from '../../agent/conversation-activity';
import type { ServiceEvent } from '../../protocol';
import type { Store } from '../../store';
import { announceActivity, announceConversation } from '../conversation-updates';
import { commandOf } from '../dispatcher';
import { EventHub } from '../event-hub';
import { newSessionId, type ClientSession } from '../session';
import { TurnRunner } from './turn-runner';

/** What the practice says: a short chat, as a client's first would be. */
const PRACTICE_MESSAGE = 'A practice turn of the warm-up.';

/** What the practice's twin (Agent.practiceTwin) tells of its conversation: to the practice's own hub, as the service's agent tells its clients. */
export interface PracticeAnnouncements {
  activity: ConversationActivity;
  onActivity: (conversationId: string, source: string) => void;
}

/**
 * The warm-up's practice turn (Service.practise), run as a client's chat is: by a TurnRunner of its own
 * over the twin `twinOf` makes (Agent.practiceTwin) and its scratch `store`, its events published to the conversation's
 * followers of an EventHub of its own, where one session follows it, as a chat's sender does, and turns
 * each event into its frame (`frame`: the socket's own text and framing, with no socket); its chat
 * frame is read by the dispatcher's validation (commandOf). The twin's conversation is announced to
 * that hub as the service's are to its clients (a ConversationActivity of its own, conversation.updated
 * with the row: a first chat's sender hears it, and its path was a first run). So the validation, the runner, the feeds,
 * the announcements, the events' JSON and their frames run once before the first chat's do. No client
 * is in that hub and the session is in no door: nothing is counted, logged or sent. `signal` cancels
 * it (the turn ends as a cancelled chat). Resolves to the reply's text.
 */
export async function runPracticeTurn(twinOf: (announce: PracticeAnnouncements) => Agent, store: Store, frame: (event: ServiceEvent) => unknown, signal: AbortSignal): Promise<string> {
  const events = new EventHub();
  const activity: ConversationActivity = new ConversationActivity((conversationId, reply) => announceActivity({ events, store, activity }, conversationId, reply));
  const twin = twinOf({ activity, onActivity: (conversationId, source) => announceConversation({ events, store, activity }, conversationId, source) });
  const session: ClientSession = { id: newSessionId(), source: { kind: 'lan' }, canAnswerPermissions: false, principal: 'access', send: (event) => void frame(event) };
  const leave = events.add(session);
  const turns = new TurnRunner({ agent: twin, events, store, worktrees: store.worktrees });
  const cancel = () => turns.cancelAll();
  signal.addEventListener('abort', cancel, { once: true });
  try {
    if (signal.aborted) return '';
    // Read as a client's frame is (the dispatcher's zod schema of `chat`: built at its first parse).
    const command = commandOf({ type: 'chat', id: 'practice', message: PRACTICE_MESSAGE, stream: true, worktree: false });
    if (!('type' in command) || command.type !== 'chat') throw new Error(`the practice's chat was refused: ${JSON.stringify(command)}`);
    const { response } = await turns.run({ session, requestId: command.id, message: { kind: 'chat', command, check: () => [] } });
    return response;
  } finally {
    signal.removeEventListener('abort', cancel);
    leave();
  }
}
