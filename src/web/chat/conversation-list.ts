/** The conversation list: switch, new, delete (with an inline confirmation: webviews forbid confirm()). */
import { changedText } from './changes-view';
import { BIN, h, relativeTime, strokeIcon } from './dom';
import { planProgressText } from './plan-view';
import { sourceLabel } from '../../protocol/sources';
import { senderName } from '../sender-name';
import type { Conversation } from '../../protocol';

export interface ConversationListHandlers {
  select(id: string): void;
  create(): void;
  remove(id: string): Promise<void>;
  /** How the service names this page (ServiceConnection.actingAs): a conversation it started names no starter. */
  self?(): string | undefined;
}

export class ConversationList {
  readonly element: HTMLElement;
  private readonly list: HTMLUListElement;
  private items: Conversation[] = [];
  private current: string | undefined;

  constructor(private readonly handlers: ConversationListHandlers) {
    this.list = h('ul', { class: 'conversation-list', 'aria-label': 'Conversations' });
    this.element = h(
      'nav',
      { class: 'conversations', 'aria-label': 'Conversations' },
      h('button', { type: 'button', class: 'button primary new-chat', onclick: () => this.handlers.create() }, '+ New chat'),
      this.list,
    );
  }

  row(id: string): Conversation | undefined {
    return this.items.find((item) => item.id === id);
  }

  title(id: string): string | undefined {
    return this.items.find((c) => c.id === id)?.title;
  }

  setConversations(items: Conversation[]): void {
    this.items = items;
    this.render();
  }

  remove(id: string): void {
    this.items = this.items.filter((c) => c.id !== id);
    this.render();
  }

  /** A conversation that changed (conversation.updated): to the top, newest activity first, as listed. */
  upsert(item: Conversation): void {
    this.items = [item, ...this.items.filter((c) => c.id !== item.id)];
    this.render();
  }

  setCurrent(id: string | undefined): void {
    this.current = id;
    for (const item of Array.from(this.list.children) as HTMLElement[]) {
      const open = item.querySelector('.conversation-open');
      if (item.dataset.id === id) open?.setAttribute('aria-current', 'true');
      else open?.removeAttribute('aria-current');
    }
  }

  private render(): void {
    if (this.items.length === 0) {
      this.list.replaceChildren(h('li', { class: 'empty' }, 'No conversations yet.'));
      return;
    }
    this.list.replaceChildren(...this.items.map((c) => this.item(c)));
  }

  private item(conversation: Conversation): HTMLLIElement {
    const open = h(
      'button',
      { type: 'button', class: 'conversation-open', 'aria-current': conversation.id === this.current ? 'true' : undefined, title: conversation.title },
      h('span', { class: 'conversation-title' }, conversation.title || 'Untitled'),
      h(
        'span',
        { class: 'conversation-meta' },
        [relativeTime(conversation.updated_at), conversation.started_by ? senderName(conversation.started_by, this.handlers.self?.()) : sourceLabel(conversation.source)].filter(Boolean).join(' · '),
      ),
      stateMark(conversation),
      conversation.plan_summary ? h('span', { class: 'conversation-plan' }, planProgressText(conversation.plan_summary)) : null,
      worktreeMark(conversation),
    );
    open.addEventListener('click', () => this.handlers.select(conversation.id));
    const remove = h('button', { type: 'button', class: 'icon-button conversation-delete', 'aria-label': `Delete “${conversation.title}”`, title: 'Delete' }, strokeIcon(BIN, 16, 1.3));
    const row = h('li', { class: 'conversation', 'data-id': conversation.id }, open, remove);
    remove.addEventListener('click', () => this.confirmDelete(row, conversation, remove));
    return row;
  }

  private confirmDelete(row: HTMLLIElement, conversation: Conversation, trigger: HTMLButtonElement): void {
    const yes = h('button', { type: 'button', class: 'button danger confirm-delete' }, 'Delete');
    const no = h('button', { type: 'button', class: 'button secondary cancel-delete' }, 'Cancel');
    const box = h('div', { class: 'confirm', role: 'group', 'aria-label': 'Confirm delete' }, h('span', {}, 'Delete this conversation?'), yes, no);
    trigger.hidden = true;
    row.appendChild(box);
    yes.focus();
    no.addEventListener('click', () => {
      box.remove();
      trigger.hidden = false;
      trigger.focus();
    });
    yes.addEventListener('click', () => {
      yes.disabled = no.disabled = true;
      void this.handlers.remove(conversation.id).finally(() => {
        box.remove();
        trigger.hidden = false;
        // The row is usually gone now; keep the keyboard in the drawer.
        if (!document.activeElement || document.activeElement === document.body) this.element.querySelector<HTMLElement>('.new-chat')?.focus();
      });
    });
  }
}

/** "waiting for you (2)" while permission requests of it wait; "running…" while a turn runs. */
function stateMark(conversation: Conversation): HTMLElement | null {
  if (conversation.state === 'waiting') {
    const count = conversation.pending_permissions ?? 0;
    return h('span', { class: 'conversation-state', 'data-state': 'waiting' }, count > 1 ? `waiting for you (${count})` : 'waiting for you');
  }
  if (conversation.state === 'running') return h('span', { class: 'conversation-state', 'data-state': 'running' }, 'running…');
  return null;
}

/** On a conversation in its own worktree: its branch and "3 changed" (and that its base moved on). */
function worktreeMark(conversation: Conversation): HTMLElement | null {
  const worktree = conversation.worktree;
  if (!worktree || worktree.state !== 'active') return null;
  return h(
    'span',
    { class: 'conversation-worktree', 'data-base-moved': String(worktree.base_moved) },
    h('span', { class: 'conversation-branch' }, worktree.branch),
    ' ',
    h('span', { class: 'badge conversation-changed' }, changedText(worktree)),
    worktree.base_moved ? h('span', { class: 'conversation-base-moved' }, ' base moved') : null,
  );
}

/** A bin. */
