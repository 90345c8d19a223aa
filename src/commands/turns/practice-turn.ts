import type { Agent } from '../../agent/agent';
import type { ServiceEvent } from '../../protocol';
import type { Store } from '../../store';
import { commandOf } from '../dispatcher';
import { EventHub } from '../event-hub';
import { newSessionId, type ClientSession } from '../session';
import { TurnRunner } from './turn-runner';

/** What the practice says: a short chat, as a client's first would be. */
const PRACTICE_MESSAGE = 'A practice turn of the warm-up.';

/**
 * The warm-up's practice turn (Service.practise), run as a client's chat is: by a TurnRunner of its own
 * over `twin` (Agent.practiceTwin) and its scratch `store`, its events published to the conversation's
 * followers of an EventHub of its own, where one session follows it, as a chat's sender does, and turns
 * each event into its frame (`frame`: the socket's own text and framing, with no socket); its chat
 * frame is read by the dispatcher's validation (commandOf). So the validation, the runner, the feeds,
 * the events' JSON and their frames run once before the first chat's do. No client
 * is in that hub and the session is in no door: nothing is counted, logged or sent. `signal` cancels
 * it (the turn ends as a cancelled chat). Resolves to the reply's text.
 */
export async function runPracticeTurn(twin: Agent, store: Store, frame: (event: ServiceEvent) => unknown, signal: AbortSignal): Promise<string> {
  const events = new EventHub();
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
