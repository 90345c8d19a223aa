import type { Agent, ChatOutput, TurnEvent } from '../../agent/agent';
import type { StoredAttachment } from '../../agent/attachments/content';
import { previewOf } from '../../agent/preview';
import { turnFailureOf } from '../../agent/turn-failure';
import type { RequestId, ResultOf } from '../../protocol';
import type { Store } from '../../store';
import type { Logger } from '../../log/logger';
import type { TurnEnd, TurnRequest, TurnStarter, WorktreeRecords } from '../context';
import type { EventHub } from '../event-hub';
import { clientLabel } from '../agent-context-handlers';
import { sessionLabel } from '../audit-actor';
import { isOwner } from '../roles';
import { personOf } from '../session';
import { ChatResends } from './chat-resends';
import { RetryResends } from './retry-resends';
import { RunningChats } from './running-chats';
import { announceTurnEnded, keepUnanswered, type EndedTurn } from './turn-ended';
import { announceChangesReady } from './changes-ready';

type ChatResult = ResultOf<'chat'>;

/** How long delete_conversation waits for the conversation's stopped turns to end before it deletes anyway. */
const STOP_BEFORE_DELETE_MS = 10_000;

/**
 * The one home of a turn, whoever starts it (the chat command, the webhook inbox): a resend of a chat is
 * answered, not run again; the turn is registered for `cancel`; its events go to the conversation's
 * followers as the agent makes them (a chat's sender follows from its user message on); and its end is
 * announced as `turn.ended` (docs/design.md, "The path of one chat message").
 */
export class TurnRunner implements TurnStarter {
  private readonly running = new RunningChats();
  private readonly resends: ChatResends;
  private readonly retries: RetryResends;

  constructor(private readonly deps: { agent: Agent; events: EventHub; store: Store; worktrees: WorktreeRecords; logger?: Logger }) {
    this.resends = new ChatResends(deps.store);
    this.retries = new RetryResends(deps.store);
  }

  /** Runs the turn; a chat's result (what a resend of it gets too). A failure is thrown after it is announced. */
  run(request: TurnRequest): Promise<ChatResult> {
    const { message, session } = request;
    // A resend (same sender, same client_message_id) gets the original result, never a second turn.
    if (message.kind === 'chat') return this.resends.once(message.command, session, () => this.runOnce(request));
    // A retry's resend (same sender, same client_retry_id) likewise, also after a restart (its key is stored with it).
    if (message.kind === 'retry') return this.retries.once(message.command, session, (retryKey) => this.runOnce(request, retryKey));
    return this.runOnce(request);
  }

  cancel(sessionId: string, requestId: RequestId): boolean {
    return this.running.cancel(sessionId, requestId);
  }

  /** Stops the conversation's running turns, whoever started them; false when none runs. */
  cancelConversation(conversationId: string): boolean {
    return this.running.cancelConversation(conversationId);
  }

  /**
   * Stops the conversation's running turns and settles once they ended (their stopped replies stored), or
   * after `boundMs` (a tool that ignores its signal): delete_conversation, before the conversation goes.
   */
  async stopConversation(conversationId: string, boundMs = STOP_BEFORE_DELETE_MS): Promise<void> {
    if (!this.running.cancelConversation(conversationId)) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.running.idle(conversationId), new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs)))]);
    clearTimeout(timer);
  }

  /** Stops every running turn (the service is stopping and the grace period is over). */
  cancelAll(): void {
    this.running.cancelAll();
  }

  /** `retryKey`: a retry's client_retry_id with its sender, stored with the retry once its checks pass. */
  private async runOnce(request: TurnRequest, retryKey?: string): Promise<ChatResult> {
    const { session, message } = request;
    // Refused before anything starts (nothing to cancel, no turn to announce).
    const attachments = message.kind === 'chat' ? message.check() : [];
    const run = this.running.start(session.id, request.requestId);
    const origin = { sessionId: session.id, requestId: request.requestId };
    // Known from the turn's first event, its user message (a retry's: once its checks passed); a turn
    // refused or removed before it never began.
    let conversationId: string | undefined;
    let messageId: string | undefined;
    const begin = (id: string) => {
      conversationId = id;
      // A client's sender hears its turn as a follower (numbered, its request id on its copies); a
      // webhook sender hears of it by the outbox's callback. Cancellable by conversation from now on.
      if (message.kind !== 'admitted') this.deps.events.feeds.follow(session, conversationId, undefined, false);
      run.attach(conversationId);
    };
    const publish = (event: TurnEvent) => {
      if (conversationId === undefined) begin(event.conversation_id);
      if (messageId === undefined && event.event === 'chat.message' && event.message.role === 'user') messageId = event.message.id;
      this.deps.events.feeds.publish(event, { origin });
    };
    const began = (id: string) => {
      begin(id);
      messageId = message.kind === 'retry' ? message.command.message_id : undefined;
      // Its first event (a piece, a tool, a wait, its end) starts the turn a fresh follower is sent.
      this.deps.events.feeds.beginTurn(id);
    };
    // The model's answer is complete: its pieces go out before the turn's end work (the reply's commit).
    const answered = () => {
      if (conversationId !== undefined) this.deps.events.feeds.flush(conversationId);
    };
    try {
      let output: ChatOutput;
      try {
        output = await this.answer(request, attachments, { publish, answered }, run.signal, began, retryKey);
      } catch (error) {
        await this.ended(request, conversationId, messageId, { outcome: 'failed', error, failure: turnFailureOf(error) });
        throw error;
      }
      await this.ended(request, conversationId, messageId, { outcome: output.removed ? 'removed' : output.cancelled ? 'cancelled' : 'answered' }, output);
      return { response: output.response, conversation_id: output.conversation_id, ...(output.cancelled ? { cancelled: true as const } : {}) };
    } finally {
      run.done();
      // The answer (or the failure) reaches the sender after its turn's events, turn.ended included:
      // they go to the followers, the sender one of them, once this turn of the loop is done.
      if (conversationId !== undefined) this.deps.events.feeds.flush(conversationId);
    }
  }

  private answer(
    { session, message }: TurnRequest,
    attachments: readonly StoredAttachment[],
    { publish, answered }: { publish: (event: TurnEvent) => void; answered: () => void },
    signal: AbortSignal,
    began: (conversationId: string) => void,
    retryKey: string | undefined,
  ): Promise<ChatOutput> {
    const source = session.source;
    if (message.kind === 'retry') {
      const { conversation_id: conversationId, message_id: messageId, stream } = message.command;
      const retry = { conversationId, messageId, retryKey, source, signal, answered, stream: stream === true, client: clientLabel(session, this.deps) };
      // Its prompts are the owner's to answer unless the owner retries a message the owner sent (a
      // password user's words must not reach a run_command that user could approve: "Roles").
      const ownerAnswersPrompts = (sentByOwner: boolean) => !isOwner(session) || !sentByOwner;
      return this.deps.agent.retry({ ...retry, ownerAnswersPrompts }, publish, began);
    }
    if (message.kind === 'admitted') {
      const { conversationId, model, storeReply, clientMessageId, text } = message;
      // Listed behind a running turn like a chat, under the id its sender knows it by.
      const waitingAs = { client_message_id: clientMessageId, preview: previewOf(text) };
      return this.deps.agent.answerAdmitted(conversationId, message, { source, model, signal, answered, storeReply, waitingAs }, publish);
    }
    const { command } = message;
    const clientMessageId = command.client_message_id;
    return this.deps.agent.chat(
      {
        message: command.message,
        context: command.context,
        attachments,
        conversationId: command.conversation_id,
        source,
        ownerAnswersPrompts: !isOwner(session),
        signal,
        answered,
        stream: command.stream === true,
        sender: personOf(session),
        clientMessageId,
        clientKey: clientMessageId === undefined ? undefined : ChatResends.keyOf(session, clientMessageId),
        client: clientLabel(session, this.deps),
        from: sessionLabel(session, this.deps.store.devices),
        worktree: command.worktree,
      },
      publish,
    );
  }

  /** The starter's part first (settle), then `turn.ended` to every client that may see the conversation. */
  private async ended(request: TurnRequest, conversationId: string | undefined, messageId: string | undefined, end: TurnEnd, output?: ChatOutput): Promise<void> {
    const forGood = request.settle ? await request.settle(end) : true;
    if (!forGood || conversationId === undefined || end.outcome === 'removed') return;
    const turn: EndedTurn = {
      conversationId,
      messageId,
      source: request.session.source,
      outcome: end.outcome,
      failure: end.outcome === 'failed' ? end.failure : undefined,
      instructions: output?.instructions,
      filesWritten: output?.filesWritten,
    };
    // Kept before it is told: a page reloaded at once reads why its message has no reply (get_messages).
    await keepUnanswered(this.deps, turn);
    announceTurnEnded(this.deps, turn);
    // Any end (a turn stopped part way may have changed files too), told after turn.ended without
    // holding the chat's answer back for a git diff.
    void announceChangesReady(this.deps, conversationId).catch(() => undefined);
  }
}
