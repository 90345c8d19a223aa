/**
 * Prompts for `permission.request` (docs/protocol.md, "Permission requests"): what the call would do
 * (preview-view.ts), where it came from, in which conversation, how long it waits; Allow / Allow for this
 * conversation / Always allow / Deny / Deny with a note. They stay above the composer whatever
 * conversation is on screen, and close when the connection's tracker of waiting requests says it ended
 * (`permission.resolved`, or no longer listed) or on the answer to this page's own response, whoever
 * decided (this page, the editor, another phone), saying briefly who did (permission-answer-text.ts).
 */
import type { EnvelopeOf, PermissionDecision, PermissionRequest } from '../../protocol';
import type { PendingChange, PendingRequests } from '../../protocol/pending-requests';
import { shortened } from '../../protocol/code-points';
import { sourceLabel } from '../../protocol/sources';
import { answerText, GONE_TEXT, resolvedText } from '../permission-answer-text';
import { senderName } from '../sender-name';
import { h } from './dom';
import { askWords, partsText, toolWords, wordsText } from '../../protocol/tool-words';
import { wordNodes } from './word-nodes';
import { renderPreview } from './preview-view';

export interface PermissionCardsOptions {
  /** The requests waiting on this connection: a card each. */
  pending: PendingRequests;
  /** Sends the answer; resolves the service's envelope, or undefined when the connection dropped first. */
  answer(requestId: string, decision: PermissionDecision, note?: string): Promise<EnvelopeOf<'permission_response'> | undefined>;
  /** The conversation's title when the request does not carry it (an older service). */
  conversationTitle(conversationId: string): string | undefined;
  /** The conversation on screen: a prompt of it does not name it ("In …" is left out). */
  shownConversation?(): string | undefined;
  /** Opens the change in the editor's diff editor (the webview only). */
  showDiff?(requestId: string): void;
  /** How the service names this page (ServiceConnection.actingAs): its own answers name nobody. */
  self?(): string | undefined;
}

/** The longest note the service takes (`permission_response.note`). */
export const MAX_NOTE_CHARS = 2000;
/** How long "Allowed from the editor" stays after a card closes. */
const OUTCOME_SHOWN_MS = 5000;
const CLOCK_EVERY_MS = 20_000;
/** Characters of a conversation's title a prompt names it by. */
const TITLE_SHOWN_CHARS = 48;

interface Card {
  request: PermissionRequest;
  element: HTMLElement;
  time: HTMLElement;
  /** "Asked from Pixel 8 · In “Plan the retry”": who asked, and where when it is not the conversation on screen. */
  source: HTMLElement;
  setBusy(busy: boolean): void;
}

export class PermissionCards {
  readonly element: HTMLElement;
  private readonly cards = new Map<string, Card>();
  private readonly outcomes: HTMLElement;
  private clock: ReturnType<typeof setInterval> | undefined;
  private readonly listeners = new Set<() => void>();
  /** A request asked to be brought into view before its card arrived (the editor's status bar click). */
  private wanted: string | undefined;

  constructor(private readonly options: PermissionCardsOptions) {
    this.outcomes = h('div', { class: 'permission-outcomes', role: 'status' });
    this.element = h('div', { class: 'permission-cards', 'aria-live': 'assertive' }, this.outcomes);
    for (const request of options.pending.values()) this.show(request);
    options.pending.onChange((change) => this.follow(change));
  }

  /** The requests on screen, waiting for an answer. */
  get count(): number {
    return this.cards.size;
  }

  /** The requests on screen, oldest first. */
  requests(): PermissionRequest[] {
    return Array.from(this.cards.values(), (card) => card.request);
  }

  /** Another conversation is on screen: each prompt names its conversation unless it is that one. */
  conversationShown(): void {
    for (const card of this.cards.values()) this.describe(card);
  }

  private describe(card: Card): void {
    const request = card.request;
    const title = request.conversation_id === this.options.shownConversation?.() ? undefined : (request.conversation_title ?? this.options.conversationTitle(request.conversation_id));
    // Who asked, named as everywhere on the page (sender-name.ts): this page's own credential is "this device".
    const who = request.from === undefined ? sourceLabel(request.source) : (senderName(request.from, this.options.self?.()) ?? 'this device');
    card.source.textContent = [`Asked from ${who}`, title ? `In “${shortened(title, TITLE_SHOWN_CHARS)}”` : ''].filter(Boolean).join(' · ');
  }

  /** Called whenever cards come or go (the header's count follows). */
  onChange(listener: () => void): void {
    this.listeners.add(listener);
  }

  private follow(change: PendingChange): void {
    switch (change.kind) {
      case 'added':
        return this.show(change.request);
      case 'resolved':
        return this.close(change.requestId, resolvedText(change.event, this.options.self?.()));
      case 'gone':
        return this.close(change.request.request_id, GONE_TEXT);
      case 'listed':
        // Reconnected and listed again: what is still on screen still waits.
        for (const card of this.cards.values()) card.setBusy(false);
    }
  }

  private show(request: PermissionRequest): void {
    if (this.cards.has(request.request_id)) return;
    const card = this.build(request);
    this.cards.set(request.request_id, card);
    this.element.insertBefore(card.element, this.outcomes);
    this.tick();
    this.startClock();
    this.changed();
    card.element.querySelector<HTMLButtonElement>('button[data-decision="allow"]')?.focus({ preventScroll: true });
    if (this.wanted === request.request_id) this.reveal(request.request_id);
  }

  /** The connection dropped: what is on screen may be decided meanwhile; it waits, unanswerable, until the service lists again. */
  markStale(): void {
    for (const card of this.cards.values()) card.setBusy(true);
  }

  /**
   * Brings a request's card into view (a notification opened the page on it, the editor's waiting count
   * was clicked); a card not there yet is brought into view when it arrives.
   */
  reveal(requestId: string): boolean {
    const card = this.cards.get(requestId);
    this.wanted = card ? undefined : requestId;
    if (!card) return false;
    card.element.scrollIntoView({ block: 'nearest' });
    card.element.querySelector<HTMLButtonElement>('button[data-decision="allow"]')?.focus({ preventScroll: true });
    return true;
  }

  /** The oldest waiting request's card into view (the header's "waiting" badge). */
  revealFirst(): void {
    const first = this.cards.keys().next();
    if (!first.done) this.reveal(first.value);
  }

  private build(request: PermissionRequest): Card {
    const asked = askWords(request.tool, request.arguments);
    const error = h('div', { class: 'permission-error', role: 'alert' });
    const buttons: HTMLButtonElement[] = [];
    const setBusy = (busy: boolean) => buttons.forEach((b) => (b.disabled = busy));
    const choose = async (decision: PermissionDecision, note?: string) => {
      setBusy(true);
      error.textContent = '';
      const answer = await this.options.answer(request.request_id, decision, note);
      if (!this.cards.has(request.request_id)) return;
      // Settled (decided here or elsewhere first, or expired): nothing left to decide here.
      const said = answer ? answerText(answer, this.options.self?.()) : { text: 'Not connected.', settled: false };
      if (said.settled) {
        this.close(request.request_id, said.text);
      } else {
        error.textContent = said.text;
        setBusy(false);
      }
    };
    const button = (label: string, decision: PermissionDecision, kind: string, title?: string, onClick = () => void choose(decision)) => {
      const b = h('button', { type: 'button', class: `button ${kind}`, 'data-decision': decision, title }, label);
      b.addEventListener('click', onClick);
      buttons.push(b);
      return b;
    };
    // A permanent rule for a command flagged as risky is asked once more, showing the rule it adds.
    const risky = request.preview?.kind === 'command' && request.preview.warnings.length > 0;
    const alwaysConfirm = risky ? this.alwaysConfirm(request, () => void choose('allow_always'), buttons) : undefined;
    const always = () => {
      if (!alwaysConfirm) return void choose('allow_always');
      alwaysConfirm.hidden = false;
      alwaysConfirm.querySelector<HTMLButtonElement>('.permission-always-confirm')?.focus();
    };

    const noteField = h('textarea', {
      class: 'permission-note',
      rows: 2,
      maxlength: MAX_NOTE_CHARS,
      placeholder: 'Why not, or what to do instead (the assistant reads this)',
      'aria-label': 'Note for the assistant',
    });
    const noteSend = h('button', { type: 'button', class: 'button danger permission-note-send' }, 'Deny with this note');
    noteSend.addEventListener('click', () => void choose('deny', noteField.value.trim() || undefined));
    buttons.push(noteSend);
    const noteForm = h('div', { class: 'permission-note-form', hidden: true }, noteField, noteSend);
    const noteToggle = h('button', { type: 'button', class: 'button secondary permission-note-toggle', 'aria-expanded': 'false' }, 'Deny with a note…');
    noteToggle.addEventListener('click', () => {
      noteForm.hidden = !noteForm.hidden;
      noteToggle.setAttribute('aria-expanded', String(!noteForm.hidden));
      if (!noteForm.hidden) noteField.focus();
    });
    buttons.push(noteToggle);

    const time = h('div', { class: 'permission-time' });
    const source = h('div', { class: 'permission-source' });
    const showDiff = this.options.showDiff && request.preview?.kind === 'diff' ? () => this.options.showDiff?.(request.request_id) : undefined;
    const element = h(
      'section',
      { class: 'permission-card', role: 'alertdialog', 'aria-label': partsText(asked), 'data-request-id': request.request_id, 'data-tool': request.tool },
      h('div', { class: 'permission-title' }, ...wordNodes(asked)),
      h('div', { class: 'permission-context' }, source, time),
      renderPreview(request.preview, request.arguments, { showDiff }),
      h(
        'div',
        { class: 'permission-actions' },
        button('Allow', 'allow', 'primary'),
        button('Allow for this conversation', 'allow_conversation', 'secondary'),
        button('Always allow', 'allow_always', 'secondary', 'Adds a rule allowing calls like this one from now on (shown once added; remove it under Permission rules)', always),
        button('Deny', 'deny', 'danger'),
        noteToggle,
      ),
      alwaysConfirm,
      noteForm,
      error,
    );
    const card = { request, element, time, source, setBusy };
    this.describe(card);
    return card;
  }

  /** "Always allow" once more for a risky command: the rule it adds, then Add rule / Cancel. */
  private alwaysConfirm(request: PermissionRequest, confirm: () => void, buttons: HTMLButtonElement[]): HTMLElement {
    const rule = request.always_rule;
    const add = h('button', { type: 'button', class: 'button danger permission-always-confirm' }, 'Add the rule and allow');
    const cancel = h('button', { type: 'button', class: 'button secondary permission-always-cancel' }, 'Cancel');
    buttons.push(add);
    const panel = h(
      'div',
      { class: 'permission-always', role: 'group', 'aria-label': 'Always allow?', hidden: true },
      h('div', { class: 'permission-always-text' }, '⚠ This command was flagged. “Always allow” adds a permanent rule: calls it matches run without asking, from now on.'),
      rule ? h('pre', { class: 'permission-always-rule' }, rule) : h('div', { class: 'permission-always-text' }, 'The rule is named once it is added.'),
      h('div', { class: 'permission-always-actions' }, add, cancel),
    );
    add.addEventListener('click', confirm);
    cancel.addEventListener('click', () => (panel.hidden = true));
    return panel;
  }

  private close(requestId: string, outcome?: string): void {
    const card = this.cards.get(requestId);
    if (!card) return;
    card.element.remove();
    this.cards.delete(requestId);
    if (outcome) this.flash(`${wordsText(toolWords(card.request.tool, card.request.arguments, 'asked'))}: ${outcome}`);
    if (this.cards.size === 0) this.stopClock();
    this.changed();
  }

  private flash(text: string): void {
    const line = h('div', { class: 'permission-outcome' }, text);
    this.outcomes.append(line);
    setTimeout(() => line.remove(), OUTCOME_SHOWN_MS);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  private startClock(): void {
    this.clock ??= setInterval(() => this.tick(), CLOCK_EVERY_MS);
  }

  private stopClock(): void {
    clearInterval(this.clock);
    this.clock = undefined;
  }

  /** "asked 3 min ago · waits 27 min more", for every card. */
  private tick(now = Date.now()): void {
    for (const card of this.cards.values()) card.time.textContent = timeText(card.request, now);
  }
}

function timeText(request: PermissionRequest, now: number): string {
  const parts: string[] = [];
  const created = request.created_at ? Date.parse(request.created_at) : NaN;
  if (!Number.isNaN(created)) parts.push(`asked ${ago(now - created)}`);
  const expires = request.expires_at ? Date.parse(request.expires_at) : NaN;
  if (!Number.isNaN(expires)) parts.push(expires > now ? `waits ${duration(expires - now)} more` : 'expiring now');
  return parts.join(' · ');
}

function ago(ms: number): string {
  return ms < 60_000 ? 'just now' : `${duration(ms)} ago`;
}

function duration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'less than a minute';
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
}
