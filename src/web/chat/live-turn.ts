import type { Message, ViewEvent } from '../../protocol';
import type { AttachmentThumbnails } from './attachments';
import type { MessageView, StreamingReply, ToolCard } from './message-view';
import { attachUsage } from './usage-view';

/** The events of a conversation's turn, drawn live for the conversation on screen whoever started it. */
export type TurnEvent = Extract<ViewEvent, { event: 'chat.message' | 'chat.delta' | 'tool.call' | 'tool.result' | 'turn.retrying' | 'turn.ended' }>;
type TurnEventOf<E extends TurnEvent['event']> = Extract<TurnEvent, { event: E }>;

/** The running turn of the conversation on screen, as its events draw it. */
interface Turn {
  reply: StreamingReply | undefined;
  tools: ToolCard[];
  /** Everything it put on screen, so a reload of the history can keep what is not stored yet. */
  nodes: HTMLElement[];
  /** Its user message, and whether this page sent it (its own bubble): a failed turn of its own offers Retry. */
  asked?: { message: Message; own: boolean };
}

/** A turn that failed or was stopped, as the page tells it at the turn (turn-notices.ts). */
export interface FailedTurn {
  event: TurnEventOf<'turn.ended'>;
  /** The user message it answered, when this page saw it; `own`: this page sent it. */
  asked?: { message: Message; own: boolean };
}

export interface LiveTurnDeps {
  messages: MessageView;
  thumbnails: AttachmentThumbnails;
  /** The page's own bubble of a user message it sent (by its client_message_id), marked sent; undefined when not its own. */
  claimSent(clientMessageId: string | undefined): HTMLElement | undefined;
  /** The provider failed and the service asks it again after a wait (`turn.retrying`): say so at the turn. */
  turnRetrying(event: TurnEventOf<'turn.retrying'>): void;
  /** The turn on screen failed: say so at the turn (after what it drew). */
  turnFailed(failed: FailedTurn): void;
  /** The turn on screen was stopped (`cancelled`): say so at the turn; `replied`: part of a reply is on screen, marked stopped. */
  turnStopped(stopped: FailedTurn, replied: boolean): void;
}

/**
 * The live turn of the conversation on screen (one of the chat app's three jobs, beside the outbox's
 * sending and navigation): draws its events, each once (by `seq`, and stored messages by id), and keeps
 * what it drew that is not stored yet across a reload of the history.
 */
export class LiveTurn {
  private turn: Turn | undefined;
  /** The last `seq` seen per followed conversation: after a reconnect, follow again from there. */
  private readonly lastSeq = new Map<string, number>();
  /** Ids of the stored messages on screen: a replayed chat.message is drawn once. */
  private readonly shownIds = new Set<string>();

  constructor(private readonly deps: LiveTurnDeps) {}

  /** False for an event already seen: the catch-up after a reconnect starts after the last seen, never draws one twice. */
  isNew(event: TurnEvent): boolean {
    if (event.seq === undefined) return true;
    if (event.seq <= (this.lastSeq.get(event.conversation_id) ?? -1)) return false;
    this.lastSeq.set(event.conversation_id, event.seq);
    return true;
  }

  /** A turn of the conversation on screen is drawn and has not ended. */
  get running(): boolean {
    return this.turn !== undefined;
  }

  /** The last `seq` seen of the conversation (undefined: not followed yet, or left). */
  lastSeqOf(conversationId: string): number | undefined {
    return this.lastSeq.get(conversationId);
  }

  /** follow_conversation answered with the conversation's last number. */
  followed(conversationId: string, seq: number): void {
    if (seq > (this.lastSeq.get(conversationId) ?? -1)) this.lastSeq.set(conversationId, seq);
  }

  /** Draws an event of the conversation on screen. */
  draw(event: TurnEvent): void {
    switch (event.event) {
      case 'chat.message':
        return this.onMessage(event);
      case 'chat.delta':
        return this.onDelta(event);
      case 'tool.call':
        return this.onToolCall(event);
      case 'tool.result':
        return this.onToolResult(event);
      case 'turn.retrying':
        return this.deps.turnRetrying(event);
      case 'turn.ended':
        return this.endTurn(event);
    }
  }

  /** The chat the page sent failed: a reply it was streaming ends as it is. */
  abandonReply(): void {
    this.turn?.reply?.finish('');
  }

  /** The conversation leaves the screen: nothing of it is drawn any more. */
  leave(conversationId: string | undefined): void {
    this.turn = undefined;
    this.shownIds.clear();
    if (conversationId) this.lastSeq.delete(conversationId);
  }

  /** The history was drawn afresh: what the running turn drew that is not stored yet goes after it. */
  historyShown(messages: readonly { id: string }[]): void {
    this.shownIds.clear();
    for (const message of messages) this.shownIds.add(message.id);
    const stored = (node: HTMLElement) => node.dataset.messageId !== undefined && this.shownIds.has(node.dataset.messageId);
    if (this.turn) this.turn.nodes = this.turn.nodes.filter((node) => !stored(node));
    for (const node of this.turn?.nodes ?? []) this.deps.messages.append(node);
  }

  private liveTurn(): Turn {
    this.turn ??= { reply: undefined, tools: [], nodes: [] };
    return this.turn;
  }

  private onMessage(event: TurnEventOf<'chat.message'>): void {
    const message = event.message;
    if (this.shownIds.has(message.id)) return;
    this.shownIds.add(message.id);
    if (message.role === 'summary') {
      // Made during a turn (before a step) or on demand (compact_conversation, no turn): never starts one.
      const node = this.deps.messages.addSummary(message);
      this.turn?.nodes.push(node);
      return;
    }
    const turn = this.liveTurn();
    if (message.role === 'user') {
      // Our own message (its chat's client_message_id, also after a resend) is already on screen: mark it sent.
      const bubble = this.deps.claimSent(message.client_message_id);
      const node = bubble ?? this.deps.messages.addUser(message.content, false, message.context);
      this.deps.thumbnails.show(node, message.attachments);
      this.deps.messages.showSender(node, message.from);
      node.dataset.messageId = message.id;
      turn.nodes.push(node);
      turn.asked = { message, own: bubble !== undefined };
      return;
    }
    if (message.role !== 'assistant') return;
    const reply = turn.reply ?? this.deps.messages.startReply();
    if (!turn.reply) turn.nodes.push(reply.element);
    turn.reply = undefined;
    reply.finish(message.content);
    reply.element.dataset.messageId = message.id;
    attachUsage(reply.element, message.usage);
  }

  private onDelta(event: TurnEventOf<'chat.delta'>): void {
    const turn = this.liveTurn();
    if (!turn.reply) {
      turn.reply = this.deps.messages.startReply();
      turn.nodes.push(turn.reply.element);
    }
    turn.reply.append(event.delta);
  }

  private onToolCall(event: TurnEventOf<'tool.call'>): void {
    const turn = this.liveTurn();
    // Text streamed before a tool call is its own bubble; the final answer starts a new one.
    if (turn.reply) {
      turn.reply.finish(turn.reply.received);
      turn.reply = undefined;
    }
    // A call the history already shows (the catch-up after opening a running conversation re-sends its
    // turn's events): the same card, running again if the history had no result for it yet.
    const shown = this.deps.messages.toolCard(event.call_id);
    if (shown) {
      if (shown.unresolved) shown.setStatus('running');
      turn.tools.push(shown);
      return;
    }
    const card = this.deps.messages.addTool(event.tool, event.arguments, event.call_id);
    turn.tools.push(card);
    turn.nodes.push(card.element);
  }

  private onToolResult(event: TurnEventOf<'tool.result'>): void {
    const byId = event.call_id === undefined ? undefined : this.turn?.tools.find((c) => c.callId === event.call_id);
    // Its result is on screen already (the history showed it; the catch-up re-sent it): nothing to add.
    if (byId && byId.element.dataset.status !== undefined) return;
    const card = byId ?? this.turn?.tools.find((c) => c.tool === event.tool && c.element.dataset.status === undefined);
    card?.setStatus(event.ok ? 'ok' : event.denied ? 'denied' : 'failed', { content: event.content, detail: event.detail });
    // An image the agent read is shown with its tool.
    if (card) this.deps.thumbnails.show(card.element, event.attachments);
  }

  private endTurn(event: TurnEventOf<'turn.ended'>): void {
    const cancelled = event.outcome === 'cancelled';
    const reply = this.turn?.reply;
    if (reply) reply.finish(reply.received, cancelled);
    const asked = this.turn?.asked;
    this.turn = undefined;
    if (event.outcome === 'failed') this.deps.turnFailed({ event, ...(asked ? { asked } : {}) });
    else if (cancelled) this.deps.turnStopped({ event, ...(asked ? { asked } : {}) }, reply !== undefined);
  }
}
