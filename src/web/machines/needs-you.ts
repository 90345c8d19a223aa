/**
 * One list of everything that needs the user, across all paired machines: prompts waiting first (each
 * with its preview one tap away: Allow is offered only beside what it allows; Deny right here), then
 * runs finished since the user last looked at their conversation, which "Clear finished" forgets.
 * Tapping an item switches to its machine and opens the conversation.
 */
import type { PermissionRequest } from '../../protocol';
import { h, relativeTime } from '../chat/dom';
import { renderPreview } from '../chat/preview-view';
import { askWords, partsText } from '../../protocol/tool-words';
import type { MachineEntry } from './machine-entry';

export interface NeedsYouActions {
  open(machineId: string, link: { conversation: string; request?: string }): void;
  /** Answers a prompt on its machine; resolves with what to say (who decided, or why it failed). */
  answer(machineId: string, requestId: string, decision: 'allow' | 'deny'): Promise<string>;
}

export class NeedsYouList {
  readonly element: HTMLElement;
  private readonly list: HTMLElement;
  private readonly empty = h('p', { class: 'needs-you-empty' }, 'Nothing waits for you.');
  private readonly outcome = h('p', { class: 'needs-you-outcome', role: 'status' });
  private readonly clear: HTMLButtonElement;
  private entries: readonly MachineEntry[] = [];
  /** Prompts whose preview is open: kept open when the list is drawn again. */
  private readonly reviewing = new Set<string>();

  constructor(private readonly actions: NeedsYouActions) {
    this.list = h('ul', { class: 'needs-you-list' });
    this.clear = h('button', { type: 'button', class: 'button secondary needs-you-clear', hidden: true }, 'Clear finished');
    this.clear.addEventListener('click', () => {
      for (const entry of this.entries) entry.status.clearFinished();
    });
    this.element = h('section', { class: 'needs-you', 'aria-label': 'Needs you' }, h('div', { class: 'needs-you-head' }, h('h2', {}, 'Needs you'), this.clear), this.outcome, this.empty, this.list);
  }

  render(entries: readonly MachineEntry[]): void {
    this.entries = entries;
    // Prompts of every machine first: a person is waited for; a finished run can wait (newest first).
    const prompts = entries.flatMap((entry) => [...entry.status.waiting.values()].map((request) => this.promptItem(entry, request)));
    const finished = entries.flatMap((entry) =>
      [...entry.status.finished]
        .reverse()
        .map((run) =>
          item(entry, 'finished', run.conversation_id, `${run.outcome === 'failed' ? 'Failed' : 'Finished'} · ${relativeTime(run.at)}`, run.title, () =>
            this.actions.open(entry.machine.id, { conversation: run.conversation_id }),
          ),
        ),
    );
    const waiting = new Set(entries.flatMap((entry) => entry.status.waiting.values().map((request) => request.request_id)));
    for (const id of this.reviewing) if (!waiting.has(id)) this.reviewing.delete(id);
    this.empty.hidden = prompts.length + finished.length > 0;
    this.clear.hidden = finished.length === 0;
    this.list.replaceChildren(...prompts, ...finished);
  }

  private promptItem(entry: MachineEntry, request: PermissionRequest): HTMLElement {
    const machineId = entry.machine.id;
    const open = () => this.actions.open(machineId, { conversation: request.conversation_id, request: request.request_id });
    const element = item(entry, 'prompt', request.conversation_id, partsText(askWords(request.tool, request.arguments)), request.conversation_title, open);
    element.dataset.requestId = request.request_id;
    const answer = (decision: 'allow' | 'deny') => async () => {
      for (const button of Array.from(element.querySelectorAll('button'))) button.disabled = true;
      this.outcome.textContent = await this.actions.answer(machineId, request.request_id, decision);
      for (const button of Array.from(element.querySelectorAll('button'))) button.disabled = false;
    };
    // Allow is offered only with the preview in view: approving what one has not seen is one tap too few.
    const review = h(
      'div',
      {
        class: 'needs-you-review',
        hidden: !this.reviewing.has(request.request_id),
      },
      renderPreview(request.preview, request.arguments),
      h(
        'div',
        { class: 'needs-you-answers' },
        h('button', { type: 'button', class: 'button primary needs-you-allow', onclick: answer('allow') }, 'Allow'),
        h('button', { type: 'button', class: 'button secondary needs-you-deny', onclick: answer('deny') }, 'Deny'),
      ),
    );
    const toggle = h('button', { type: 'button', class: 'button secondary needs-you-show' });
    // Deny needs no preview: it is on the row while the preview is closed, beside Allow once open.
    const quickDeny = h('button', { type: 'button', class: 'button secondary needs-you-quick-deny', onclick: answer('deny') }, 'Deny');
    const shown = () => {
      toggle.setAttribute('aria-expanded', String(!review.hidden));
      toggle.textContent = review.hidden ? 'Review…' : 'Hide';
      quickDeny.hidden = !review.hidden;
    };
    toggle.addEventListener('click', () => {
      review.hidden = !review.hidden;
      if (review.hidden) this.reviewing.delete(request.request_id);
      else this.reviewing.add(request.request_id);
      shown();
    });
    shown();
    element.append(h('div', { class: 'needs-you-answers' }, toggle, quickDeny), review);
    return element;
  }
}

function item(entry: MachineEntry, kind: 'prompt' | 'finished', conversationId: string, what: string, title: string, open: () => void): HTMLElement {
  return h(
    'li',
    { class: 'needs-you-item', 'data-kind': kind, 'data-machine-id': entry.machine.id, 'data-conversation-id': conversationId },
    h(
      'button',
      { type: 'button', class: 'needs-you-open', onclick: open },
      h('span', { class: 'needs-you-machine' }, entry.machine.name),
      h('span', { class: 'needs-you-title' }, title),
      h('span', { class: 'needs-you-what' }, what),
    ),
  );
}
