/** The message list of the conversation on screen: bubbles, streaming replies, tool cards, notes. */
import type { ContextItem, Message } from '../../protocol';
import { sentChips } from './context-chips';
import { h } from './dom';
import { ToolCard, type ToolStatus } from './tool-card';
import { renderMarkdown } from './markdown';
import { senderName } from '../sender-name';
import { attachUsage } from './usage-view';

export { ToolCard, type ToolStatus } from './tool-card';

/** An assistant reply being streamed: deltas are rendered at most once per frame. */
export class StreamingReply {
  private text = '';
  private scheduled = false;
  readonly element: HTMLElement;
  private readonly content: HTMLElement;

  constructor(private readonly view: MessageView) {
    this.content = h('div', { class: 'markdown' });
    this.element = h('div', { class: 'message assistant streaming', 'aria-busy': 'true' }, this.content);
  }

  append(delta: string): void {
    this.text += delta;
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.render(this.text);
    });
  }

  get received(): string {
    return this.text;
  }

  finish(text: string, cancelled = false): void {
    this.text = text;
    this.scheduled = false;
    this.render(text);
    this.element.classList.remove('streaming');
    this.element.removeAttribute('aria-busy');
    if (cancelled) this.element.append(h('div', { class: 'message-note' }, 'Stopped'));
    if (!text && !cancelled) this.element.remove();
  }

  private render(text: string): void {
    const stick = this.view.following;
    renderMarkdown(this.content, text);
    if (stick) this.view.scrollToEnd();
    else this.view.grewBelow(this.element);
  }
}

export class MessageView {
  readonly element: HTMLElement;
  private readonly list: HTMLElement;
  /** Called with each user message and tool result of a history put on screen, with its node (attachments are drawn by it). */
  onStoredMessage?: (node: HTMLElement, message: Message) => void;
  /** How the service names this page where it acts (ServiceConnection.actingAs): its own messages name no sender. */
  self: () => string | undefined = () => undefined;
  private readonly cardsByCall = new Map<string, ToolCard>();
  /** Every tool card on screen (the ones without a call id too). */
  private readonly cards: ToolCard[] = [];
  /** Called after a tool card is put on screen or its status changed (a waiting permission prompt may be its call's). */
  onToolCard?: () => void;
  /**
   * Shown while the reader is scrolled up and something arrived below: "Jump to latest (N new)", or
   * "New reply below" while a reply on screen grew past the bottom of the view.
   */
  private readonly jump: HTMLButtonElement;
  private unseen = 0;
  /** A reply grew below the view since the reader left the end. */
  private grown = false;
  /** Shown while the reader is more than a screen from the end (and the pill is not): scrolls to the end. */
  private readonly toEndButton: HTMLButtonElement;
  /** The reader is at the end (as of their last scroll): new content keeps them there. */
  following = true;
  /** Where our own last scroll to the end put the view. */
  private endTop = 0;

  constructor() {
    this.list = h('div', { class: 'message-list', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions', 'aria-label': 'Messages' });
    this.jump = h('button', { type: 'button', class: 'jump-latest', hidden: true, onclick: () => this.scrollToEnd() });
    this.toEndButton = h(
      'button',
      { type: 'button', class: 'to-end', hidden: true, title: 'To the end', 'aria-label': 'Scroll to the end', onclick: () => this.scrollToEnd() },
      h('span', { 'aria-hidden': 'true' }, '↓'),
    );
    this.element = h('div', { class: 'messages', tabindex: '-1' }, this.list, this.jump, this.toEndButton);
    // Whether the reader follows is decided by where they scrolled, not re-measured after content grew:
    // a reply's usage line, a card's result or a reflow below the last scroll would otherwise unpin it.
    // A scroll event of our own scrolling (the position we set, content grown since) does not unpin.
    this.element.addEventListener('scroll', () => {
      this.following = this.nearBottom() || (this.following && this.element.scrollTop >= this.endTop - 1);
      if (this.following) this.markSeen();
      this.showToEnd();
    });
    // Content that grows or reflows (streamed text, notes added to a reply, a narrower screen) keeps a
    // following reader at the end.
    if (typeof ResizeObserver === 'function') {
      const keepFollowing = new ResizeObserver(() => {
        if (this.following) this.toEnd();
        this.showToEnd();
      });
      keepFollowing.observe(this.list);
      keepFollowing.observe(this.element);
    }
  }

  clear(): void {
    this.list.replaceChildren();
    this.cardsByCall.clear();
    this.cards.length = 0;
    this.markSeen();
  }

  showEmpty(text: string): void {
    this.list.replaceChildren(h('p', { class: 'empty' }, text));
  }

  private add(node: HTMLElement): HTMLElement {
    this.list.querySelector(':scope > .empty')?.remove();
    const stick = this.following;
    // Messages still waiting in the outbox stay last: what the service sends is drawn before them.
    const own = node.classList.contains('pending');
    const waiting = own ? null : this.list.querySelector(':scope > .pending');
    this.list.insertBefore(node, waiting);
    // The reader at the bottom follows the newest content; the reader's own message always comes into
    // view; else the pill counts what arrived below.
    if (stick || own) this.scrollToEnd();
    else this.arrivedUnseen();
    return node;
  }

  private arrivedUnseen(): void {
    this.unseen += 1;
    this.showJump();
  }

  /**
   * A reply on screen was drawn longer while the reader is not following: when its end is now below the
   * view, the pill says so (a reply that grows and finishes below is otherwise never seen).
   */
  grewBelow(node: HTMLElement): void {
    if (this.following || this.grown) return;
    if (node.getBoundingClientRect().bottom <= this.element.getBoundingClientRect().bottom) return;
    this.grown = true;
    this.showJump();
  }

  private showJump(): void {
    this.jump.textContent = this.unseen > 0 ? `Jump to latest (${this.unseen} new)` : 'New reply below';
    this.jump.hidden = false;
    this.showToEnd();
  }

  private markSeen(): void {
    this.unseen = 0;
    this.grown = false;
    this.jump.hidden = true;
  }

  /** "To the end" while the reader is more than about a screen from it, unless the pill already offers the way there. */
  private showToEnd(): void {
    const box = this.element;
    const far = box.scrollHeight - box.scrollTop - box.clientHeight > box.clientHeight;
    const hidden = !far || !this.jump.hidden;
    if (this.toEndButton.hidden !== hidden) this.toEndButton.hidden = hidden;
  }

  /** The tool cards on screen, oldest first. */
  toolCards(): readonly ToolCard[] {
    return this.cards;
  }

  /** Puts back a node drawn before (a running turn's pieces after the history is reloaded). */
  append(node: HTMLElement): HTMLElement {
    return this.add(node);
  }

  /** `pending`: still in the outbox, shown after everything else until it is sent. */
  addUser(text: string, pending = false, context?: readonly ContextItem[]): HTMLElement {
    return this.add(h('div', { class: pending ? 'message user pending' : 'message user' }, h('div', { class: 'plain' }, text), context?.length ? sentChips(context) : null));
  }

  /**
   * Names who sent a user message ("from Pixel 8", "from ada", "from this computer"), so a message another
   * client or person sent reads apart from this page's own, which names nobody (web/sender-name.ts).
   */
  showSender(node: HTMLElement, from: string | undefined): void {
    const name = senderName(from, this.self());
    if (!name || node.querySelector(':scope > .message-from')) return;
    node.append(h('div', { class: 'message-from' }, `from ${name}`));
  }

  addAssistant(text: string): HTMLElement {
    const content = h('div', { class: 'markdown' });
    renderMarkdown(content, text);
    return this.add(h('div', { class: 'message assistant' }, content));
  }

  /**
   * A `summary` message: "Earlier turns summarised", its text expandable (what the model is sent from
   * now on instead of the turns above it), or the notice that a summary failed, shown as an error.
   */
  addSummary(message: Message): HTMLElement {
    if (message.compaction?.status === 'failed') {
      const node = this.addNote(message.content, 'error');
      node.classList.add('summary-failed');
      node.dataset.messageId = message.id;
      return node;
    }
    const content = h('div', { class: 'markdown' });
    renderMarkdown(content, message.content);
    const count = message.compaction?.messages;
    const label = `Earlier turns summarised${count ? ` (${count} messages)` : ''}${message.compaction?.focus ? ` · focus: ${message.compaction.focus}` : ''}`;
    const node = this.add(h('details', { class: 'summary-card' }, h('summary', {}, label), content));
    node.dataset.messageId = message.id;
    return node;
  }

  startReply(): StreamingReply {
    const reply = new StreamingReply(this);
    this.add(reply.element);
    return reply;
  }

  addTool(tool: string, args: unknown, callId?: string): ToolCard {
    const card = new ToolCard(tool, args);
    card.callId = callId;
    if (callId) this.cardsByCall.set(callId, card);
    this.cards.push(card);
    card.onStatus = () => this.onToolCard?.();
    this.add(card.element);
    this.onToolCard?.();
    return card;
  }

  /** The card of a call already on screen (from history, or live), by the call's id. */
  toolCard(callId: string | undefined): ToolCard | undefined {
    return callId === undefined ? undefined : this.cardsByCall.get(callId);
  }

  addNote(text: string, kind: 'info' | 'error' = 'info'): HTMLElement {
    return this.add(h('div', { class: `note ${kind}`, role: kind === 'error' ? 'alert' : undefined }, text));
  }

  /** Puts a history (oldest first) on screen, pairing each tool call with its result. */
  showHistory(messages: Message[]): void {
    this.clear();
    const waiting: ToolCard[] = [];
    for (const message of messages) {
      // Each node names its message, so a search hit can be shown (reveal); a tool card names its call and its result.
      if (message.role === 'user') {
        const node = this.addUser(message.content, false, message.context);
        node.dataset.messageId = message.id;
        this.showSender(node, message.from);
        this.onStoredMessage?.(node, message);
      } else if (message.role === 'assistant') {
        const node = this.addAssistant(message.content);
        node.dataset.messageId = message.id;
        attachUsage(node, message.usage);
      } else if (message.role === 'summary') {
        this.addSummary(message);
      } else {
        const name = message.tool_name ?? 'tool';
        // The store writes a batch's calls first, then their results in order: a result answers the
        // oldest waiting call of its tool.
        const index = message.tool_kind === 'result' ? waiting.findIndex((card) => card.tool === name) : -1;
        if (index < 0) {
          const card = this.addTool(name, parseObject(message.content) ?? message.content, message.call_id);
          card.element.dataset.messageId = message.id;
          waiting.push(card);
        } else {
          const [card] = waiting.splice(index, 1);
          card.setStatus(historyStatus(message), { content: message.content, detail: message.detail });
          card.element.dataset.resultId = message.id;
          this.onStoredMessage?.(card.element, message);
        }
      }
    }
    // Calls without a result were interrupted (cancel, crash), unless their turn still runs: then the
    // catch-up's tool.call for the same call id shows it running again (onToolCall).
    for (const card of waiting) {
      card.setStatus('failed');
      card.unresolved = true;
    }
    if (messages.length === 0) this.showEmpty('No messages yet.');
    this.scrollToEnd();
  }

  /** Scrolls to a stored message on screen and marks it for a moment; false when it is not on screen. */
  reveal(messageId: string): boolean {
    const node = Array.from(this.element.querySelectorAll<HTMLElement>('[data-message-id], [data-result-id]')).find((n) => n.dataset.messageId === messageId || n.dataset.resultId === messageId);
    if (!node) return false;
    node.scrollIntoView({ block: 'center' });
    node.classList.add('found');
    setTimeout(() => node.classList.remove('found'), FOUND_MARK_MS);
    return true;
  }

  nearBottom(): boolean {
    const box = this.element;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  }

  scrollToEnd(): void {
    this.toEnd();
    this.following = true;
    this.markSeen();
    this.showToEnd();
  }

  private toEnd(): void {
    this.element.scrollTop = this.element.scrollHeight;
    this.endTop = this.element.scrollTop;
  }
}

/** How long a message opened from a search stays marked. */
const FOUND_MARK_MS = 2500;

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A stored result's outcome as get_messages gives it (the same words as a live tool.result). */
function historyStatus(message: Message): ToolStatus {
  if (message.ok) return 'ok';
  return message.denied ? 'denied' : 'failed';
}
