/** The messages waiting behind the conversation's running turn (its row's `queued`), each removable. */
import type { ViewEvent } from '../../protocol';
import { h } from './dom';

type Queued = Extract<ViewEvent, { event: 'conversation.updated' }>['conversation']['queued'][number];

export class QueueView {
  readonly element: HTMLElement;
  private readonly list: HTMLUListElement;

  constructor(private readonly remove: (clientMessageId: string) => void) {
    this.list = h('ul', { class: 'queue-list' });
    this.element = h('section', { class: 'queue', 'aria-label': 'Queued messages', hidden: true }, h('div', { class: 'queue-title' }, 'Queued'), this.list);
  }

  show(queued: readonly Queued[]): void {
    this.element.hidden = queued.length === 0;
    this.list.replaceChildren(
      ...queued.map((item) => {
        const id = item.client_message_id;
        // A message sent without client_message_id cannot be removed (docs/protocol.md, "Queued messages").
        const remove = id ? h('button', { type: 'button', class: 'icon-button queue-remove', 'aria-label': 'Remove from the queue', onclick: () => this.remove(id) }, '✕') : undefined;
        return h('li', { class: 'queued', 'data-client-message-id': id ?? '' }, h('span', { class: 'queued-preview' }, item.preview), remove);
      }),
    );
  }
}
