/**
 * One list of everything that needs the user, across all paired machines: prompts waiting (Allow / Deny
 * right here, or open the prompt card on its machine) and runs finished since the user last looked at
 * their conversation. Tapping an item switches to its machine and opens the conversation.
 */
import type { PermissionRequest } from '../../protocol';
import { h, relativeTime } from '../chat/dom';
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

  constructor(private readonly actions: NeedsYouActions) {
    this.list = h('ul', { class: 'needs-you-list' });
    this.element = h('section', { class: 'needs-you', 'aria-label': 'Needs you' }, h('h2', {}, 'Needs you'), this.outcome, this.empty, this.list);
  }

  render(entries: readonly MachineEntry[]): void {
    const items = entries.flatMap((entry) => [
      ...[...entry.status.waiting.values()].map((request) => this.promptItem(entry, request)),
      ...entry.status.finished.map((run) =>
        item(entry, 'finished', run.conversation_id, `${run.outcome === 'failed' ? 'Failed' : 'Finished'} · ${relativeTime(run.at)}`, run.title, () => this.actions.open(entry.machine.id, { conversation: run.conversation_id })),
      ),
    ]);
    this.empty.hidden = items.length > 0;
    this.list.replaceChildren(...items);
  }

  private promptItem(entry: MachineEntry, request: PermissionRequest): HTMLElement {
    const machineId = entry.machine.id;
    const open = () => this.actions.open(machineId, { conversation: request.conversation_id, request: request.request_id });
    const element = item(entry, 'prompt', request.conversation_id, `Approve ${request.tool}? ${subjectOf(request)}`, request.conversation_title, open);
    element.dataset.requestId = request.request_id;
    const answer = (decision: 'allow' | 'deny') => async () => {
      for (const button of Array.from(element.querySelectorAll('button'))) button.disabled = true;
      this.outcome.textContent = await this.actions.answer(machineId, request.request_id, decision);
      for (const button of Array.from(element.querySelectorAll('button'))) button.disabled = false;
    };
    element.append(
      h(
        'div',
        { class: 'needs-you-answers' },
        h('button', { type: 'button', class: 'button primary needs-you-allow', onclick: answer('allow') }, 'Allow'),
        h('button', { type: 'button', class: 'button secondary needs-you-deny', onclick: answer('deny') }, 'Deny'),
      ),
    );
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

/** What a prompt is about in a few words: the command line, the path, or nothing more than the tool. */
function subjectOf(request: PermissionRequest): string {
  const preview = request.preview;
  const subject = preview?.kind === 'command' ? preview.command : preview?.kind === 'diff' ? preview.path : typeof request.arguments.command === 'string' ? request.arguments.command : typeof request.arguments.path === 'string' ? request.arguments.path : '';
  return subject.length > 80 ? `${subject.slice(0, 79)}…` : subject;
}
