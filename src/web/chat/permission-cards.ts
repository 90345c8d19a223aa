/**
 * Prompts for `permission.request`: Allow / Allow for this conversation / Deny. They stay above the
 * composer (whatever conversation is on screen, since an unanswered prompt denies after 120 s) and
 * close on `permission.resolved`, whoever answered (this page, the editor, another phone).
 */
import type { PermissionDecision, ServiceEvent } from '../../protocol';
import { sourceLabel } from '../../protocol/sources';
import { formatArguments, h } from './dom';

export type Decision = PermissionDecision;
export type PermissionRequest = Extract<ServiceEvent, { event: 'permission.request' }>;

export class PermissionCards {
  readonly element: HTMLElement;
  private readonly cards = new Map<string, HTMLElement>();
  /** A request the editor asked to bring forward before its card arrived. */
  private wanted: string | undefined;

  constructor(
    private readonly answer: (requestId: string, decision: Decision) => Promise<string | undefined>,
    private readonly describeConversation: (conversationId: string) => string | undefined,
    /** Opens the editor's diff view of a file change (in the editor only: absent on the phone). */
    private readonly showDiff?: (requestId: string) => void,
  ) {
    this.element = h('div', { class: 'permission-cards', 'aria-live': 'assertive' });
  }

  show(request: PermissionRequest): void {
    if (this.cards.has(request.request_id)) return;
    const error = h('div', { class: 'permission-error', role: 'alert' });
    const buttons: HTMLButtonElement[] = [];
    const choose = async (decision: Decision) => {
      buttons.forEach((b) => (b.disabled = true));
      error.textContent = '';
      const failure = await this.answer(request.request_id, decision);
      // Success closes the card through permission.resolved; a failure (already answered, gone) says why.
      if (failure) {
        error.textContent = failure;
        buttons.forEach((b) => (b.disabled = false));
      }
    };
    const button = (label: string, decision: Decision, kind: string) => {
      const b = h('button', { type: 'button', class: `button ${kind}`, 'data-decision': decision }, label);
      b.addEventListener('click', () => void choose(decision));
      buttons.push(b);
      return b;
    };
    const where = this.describeConversation(request.conversation_id);
    const diffButton = request.preview?.kind === 'diff' && this.showDiff ? h('button', { type: 'button', class: 'button secondary', 'data-action': 'show-diff' }, 'Show Diff') : null;
    diffButton?.addEventListener('click', () => this.showDiff?.(request.request_id));
    const card = h(
      'section',
      { class: 'permission-card', role: 'alertdialog', 'aria-label': `Allow ${request.tool}?`, 'data-request-id': request.request_id },
      h('div', { class: 'permission-title' }, 'Allow ', h('code', {}, request.tool), ' to run?'),
      request.source ? h('div', { class: 'permission-source' }, `Asked from ${sourceLabel(request.source)}`) : null,
      where ? h('div', { class: 'permission-where' }, `In “${where}”`) : null,
      h('pre', { class: 'tool-args' }, formatArguments(request.arguments)),
      h(
        'div',
        { class: 'permission-actions' },
        button('Allow', 'allow', 'primary'),
        button('Allow for this conversation', 'allow_session', 'secondary'),
        button('Deny', 'deny', 'danger'),
        diffButton,
      ),
      error,
    );
    this.cards.set(request.request_id, card);
    this.element.appendChild(card);
    buttons[0].focus({ preventScroll: true });
    if (this.wanted === request.request_id) this.bringForward(request.request_id);
  }

  /** Scrolls to a request's card and focuses its first button (now, or when the card arrives). */
  bringForward(requestId: string): void {
    const card = this.cards.get(requestId);
    this.wanted = card ? undefined : requestId;
    if (!card) return;
    card.scrollIntoView({ block: 'nearest' });
    card.querySelector('button')?.focus();
  }

  resolve(requestId: string): void {
    this.cards.get(requestId)?.remove();
    this.cards.delete(requestId);
  }

  clear(): void {
    this.cards.clear();
    this.element.replaceChildren();
  }
}
