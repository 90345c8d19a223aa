import type { EnvelopeOf } from '../../protocol';
import type { ServiceConnection } from '../connection';
import type { AttachmentThumbnails } from './attachments';
import { h } from './dom';
import type { TurnEvent } from './live-turn';
import type { MessageView } from './message-view';
import type { Outbox, OutboxItem } from './outbox';

/** An outbox message sent and not yet answered. */
interface InFlight {
  item: OutboxItem;
  requestId: string;
}

export interface OutboxSenderDeps {
  connection: ServiceConnection;
  outbox: Outbox;
  messages: MessageView;
  thumbnails: AttachmentThumbnails;
  connected(): boolean;
  /** What is on screen: a conversation, or the new chat of this draft. */
  screen(): { current: string | undefined; draft: string };
  /** The service answered a chat the page sent (its bubble is marked sent, or removed when it was taken out of the queue). */
  answered(item: OutboxItem, answer: EnvelopeOf<'chat'>): void;
  /**
   * The service answered `not_found` (App.unsent): what is sent in its place (its files uploaded again; itself,
   * again once reconnected), or nothing (put back). Until then it holds its place, and those typed after it wait.
   */
  notFound(item: OutboxItem, error: string | undefined): Promise<OutboxItem | undefined>;
  /**
   * The service answered `rate_limited` (too many of the person's messages wait in line, App.refused): stored
   * nowhere and not sent again by itself (it would be refused again until one starts); back to the person.
   */
  refused(item: OutboxItem, error: string | undefined): void;
}

/**
 * The outbox's sending (one of the chat app's three jobs, beside the live turn and navigation): every
 * typed message is drawn as waiting, sent in order with its client_message_id, and known as the page's
 * own when its conversation's `chat.message` names that id.
 */
export class OutboxSender {
  /** The bubbles of outbox messages on screen ("waiting to send"), by client_message_id. */
  private readonly pendingBubbles = new Map<string, HTMLElement>();
  /** Outbox messages sent and not yet answered, in the order sent. */
  private readonly inFlight: InFlight[] = [];
  /** Outbox messages the service is known to hold (stored: their chat.message; or queued: their conversation's row). */
  private readonly held = new Set<string>();

  constructor(private readonly deps: OutboxSenderDeps) {}

  /**
   * A typed message: kept in the outbox, drawn waiting, sent now if connected (else when the connection returns);
   * one whose files still upload (`uploading`) once they are done (`uploaded`).
   */
  add(item: OutboxItem): void {
    this.deps.outbox.add(item);
    this.pendingBubbles.set(item.client_message_id, this.addPendingBubble(item));
    this.flush();
  }

  /** A message's files are uploaded (those that failed left out): shown under it, and it goes; with nothing to say, it goes away. */
  uploaded(clientMessageId: string, attachments: NonNullable<OutboxItem['attachments']>): void {
    const item = this.deps.outbox.uploaded(clientMessageId, attachments);
    const bubble = this.pendingBubbles.get(clientMessageId);
    if (item && !item.text && !item.attachments?.length) {
      this.deps.outbox.remove(clientMessageId);
      this.pendingBubbles.delete(clientMessageId);
      bubble?.remove();
    } else if (item && bubble) this.addPendingBubble(item, bubble);
    this.flush();
  }

  /**
   * Sends, in order, every outbox message not on its way yet, without waiting for earlier answers: the
   * service queues a conversation's messages behind its running turn, where every client sees them and
   * may remove one. Only a new chat's next messages wait, until its first one names the conversation.
   * Offline nothing is sent; the outbox is sent again (same ids, answered once) when the connection returns.
   */
  flush(): void {
    if (!this.deps.connected()) return;
    const onItsWay = (id: string) => this.inFlight.some((s) => s.item.client_message_id === id);
    for (const item of this.deps.outbox.ready(onItsWay, (id) => this.held.has(id))) void this.sendItem(item).then(() => this.flush());
  }

  /**
   * The page's new chat whose first event this is (it names the conversation the chat made), or
   * undefined. Its next messages go there now.
   */
  newChatNamedBy(event: TurnEvent): OutboxItem | undefined {
    const sending = this.inFlight.find((s) => !s.item.conversation_id && isOurs(event, s));
    if (!sending) return undefined;
    sending.item.conversation_id = event.conversation_id;
    if (sending.item.draft) this.deps.outbox.conversationMade(sending.item.draft, event.conversation_id);
    this.flush();
    return sending.item;
  }

  /** The bubble of the outbox message a stored user message is, by the client_message_id it was sent with, marked sent. */
  claimSent(clientMessageId: string | undefined): HTMLElement | undefined {
    if (clientMessageId !== undefined) this.known([clientMessageId]);
    const bubble = clientMessageId === undefined ? undefined : this.pendingBubbles.get(clientMessageId);
    if (!bubble || clientMessageId === undefined) return undefined;
    this.pendingBubbles.delete(clientMessageId);
    markSent(bubble);
    return bubble;
  }

  /** The service holds these messages (stored or queued): those typed after them in the outbox need not wait. */
  known(clientMessageIds: Iterable<string>): void {
    const mine = new Set(this.deps.outbox.all.map((item) => item.client_message_id));
    let more = false;
    for (const id of clientMessageIds) {
      if (!mine.has(id) || this.held.has(id)) continue;
      this.held.add(id);
      more = true;
    }
    if (more) this.flush();
  }

  /**
   * The outbox's messages of what is on screen, after its history. One sent before (e.g. before a reload)
   * that the history holds (by its client_message_id) was stored: it waits only for its answer, and is not drawn twice.
   */
  showPending(storedIds: ReadonlySet<string> = new Set()): void {
    this.pendingBubbles.clear();
    this.known(storedIds);
    const { current, draft } = this.deps.screen();
    for (const item of this.deps.outbox.all) {
      const here = item.conversation_id ? item.conversation_id === current : !current && item.draft === draft;
      if (!here || storedIds.has(item.client_message_id)) continue;
      const bubble = this.addPendingBubble(item);
      // Its files uploading again after a reload, from their kept bytes (the tray shows those of a Send): said under it, online too.
      if (item.uploading) bubble.append(h('div', { class: 'message-note upload-note' }, `uploading ${item.uploading.join(', ')}…`));
      this.pendingBubbles.set(item.client_message_id, bubble);
    }
  }

  /** Sends one outbox message; kept (sent again once reconnected, answered once) when the connection drops. */
  private async sendItem(item: OutboxItem): Promise<void> {
    const sending: InFlight = { item, requestId: this.deps.connection.newId() };
    this.inFlight.push(sending);
    this.deps.outbox.markAttempted(item);
    const frame = {
      type: 'chat',
      id: sending.requestId,
      message: item.text,
      stream: true,
      client_message_id: item.client_message_id,
      ...(item.context ? { context: item.context } : {}),
      ...(item.attachments?.length ? { attachments: item.attachments.map((a) => a.attachment_id) } : {}),
      ...(item.conversation_id ? { conversation_id: item.conversation_id } : {}),
      // Said either way on a new chat, so an unticked toggle keeps it in the workspace whatever the default.
      ...(item.worktree !== undefined && !item.conversation_id ? { worktree: item.worktree } : {}),
    } as const;
    try {
      const answer = await this.deps.connection.request(frame).catch(() => undefined);
      // Undefined: kept, sent again with the same client_message_id once reconnected, answered once.
      if (answer?.status === 'error' && answer.code === 'not_found') this.settle(item, answer, await this.deps.notFound(item, answer.error));
      else if (answer?.status === 'error' && answer.code === 'rate_limited') {
        this.settle(item, answer, undefined);
        this.deps.refused(item, answer.error);
      } else if (answer) {
        this.settle(item, answer, undefined);
        this.deps.answered(item, answer);
      }
    } finally {
      // On its way (holding those typed after it) until its answer is settled.
      this.inFlight.splice(this.inFlight.indexOf(sending), 1);
      this.held.delete(item.client_message_id);
    }
  }

  /** An answered message leaves the outbox, or `next` takes its place there and its bubble. */
  private settle(item: OutboxItem, answer: EnvelopeOf<'chat'>, next: OutboxItem | undefined): void {
    const bubble = this.pendingBubbles.get(item.client_message_id);
    this.pendingBubbles.delete(item.client_message_id);
    if (next) {
      this.deps.outbox.replace(item.client_message_id, next);
      if (bubble) {
        this.pendingBubbles.set(next.client_message_id, bubble);
        bubble.dataset.clientMessageId = next.client_message_id;
      }
      return;
    }
    this.deps.outbox.remove(item.client_message_id);
    // Cancelled before any client saw it stored: taken out of the queue (remove_queued), never stored. Or not
    // found (its conversation, an attachment), or refused for now (rate_limited: too many of the person's
    // messages wait): stored nowhere, its text goes back to the box (App.unsent, App.refused).
    if (bubble && (answer.status === 'ok' ? answer.data.cancelled : answer.code === 'not_found' || answer.code === 'rate_limited')) bubble.remove();
    else if (bubble) markSent(bubble);
    if (answer.status === 'ok' && !item.conversation_id && item.draft) this.deps.outbox.conversationMade(item.draft, answer.data.conversation_id);
  }

  private drawWaiting(text: string, context: OutboxItem['context']): HTMLElement {
    const bubble = this.deps.messages.addUser(text, true, context);
    bubble.append(h('div', { class: 'message-note pending-note' }, 'waiting to send'));
    return bubble;
  }

  /** Its bubble (drawn now, or `drawn` once its files are uploaded): its files under it, the note last. */
  private addPendingBubble(item: OutboxItem, drawn = this.drawWaiting(item.text, item.context)): HTMLElement {
    drawn.querySelector(':scope > .upload-note')?.remove();
    this.deps.thumbnails.show(drawn, item.attachments);
    drawn.dataset.clientMessageId = item.client_message_id;
    // The note last, under the files.
    drawn.append(drawn.querySelector(':scope > .pending-note')!);
    return drawn;
  }
}

function markSent(bubble: HTMLElement): void {
  bubble.classList.remove('pending');
  bubble.querySelector(':scope > .pending-note')?.remove();
}

/**
 * Whether a turn event is the first of the new chat being sent: its user message names the chat's
 * client_message_id (also when the chat was resent on another connection); the other events its request id.
 */
function isOurs(event: TurnEvent, sending: InFlight): boolean {
  if (event.event === 'chat.message') return event.message.client_message_id === sending.item.client_message_id;
  return 'id' in event && event.id === sending.requestId;
}
