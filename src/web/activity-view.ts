/**
 * "Activity" on the phone page (docs/protocol.md, "Audit log"): who did what on this machine, from where.
 * A button in the drawer opens a screen over the chat: on top, whether the record's hash chain holds
 * (verify_audit); then the entries newest first (list_audit), filtered by kind and person, with "Load
 * older" paging by `next_before`. Entries recorded while the screen is open arrive as `audit.appended`.
 * Only the owner may read the record: a password user is told so, and sees nothing of it.
 */
import type { AuditEntry, AuditKind, ViewEvent } from '../protocol';
import { AUDIT_KIND_LABEL, AUDIT_KINDS, auditFacts, auditPersonLabel, auditPlaceIsPerson, auditPlaceLabel, auditSummaryText, auditVerdictText } from '../protocol/audit-labels';
import { h, relativeTime } from './chat/dom';
import type { ServiceConnection } from './connection';

/** Entries a page: a couple of screens; older ones come with "Load older". */
export const ACTIVITY_PAGE = 50;

const ALL = '';

export class ActivityView {
  /** The drawer's entry. */
  readonly button: HTMLButtonElement;
  /** The screen, over the chat (hidden until opened). */
  readonly panel: HTMLElement;
  private readonly verdict: HTMLElement;
  private readonly filters: HTMLElement;
  private readonly kind: HTMLSelectElement;
  private readonly person: HTMLSelectElement;
  private readonly list: HTMLOListElement;
  private readonly status: HTMLElement;
  private readonly older: HTMLButtonElement;
  private readonly close: HTMLButtonElement;
  /** Names seen so far, for the person filter (the service filters; the page only offers what it saw). */
  private readonly people = new Set<string>();
  private nextBefore: number | null = null;
  /** The first entry verify_audit found wrong: marked in the list too. */
  private badSeq: number | null = null;
  /** Answers to an older load than the last asked are dropped (a filter changed meanwhile). */
  private asked = 0;

  constructor(
    private readonly connection: ServiceConnection,
    private readonly handlers: { open(conversationId: string): void },
  ) {
    this.button = h('button', { type: 'button', class: 'activity-open drawer-row' }, h('span', {}, 'Activity'), h('span', { class: 'drawer-row-hint', 'aria-hidden': 'true' }, '›'));
    this.button.addEventListener('click', () => this.show());
    this.close = h('button', { type: 'button', class: 'icon-button activity-close', 'aria-label': 'Close Activity', title: 'Close' }, '✕');
    this.close.addEventListener('click', () => this.hide());
    this.verdict = h('div', { class: 'activity-verdict', role: 'status' });
    this.kind = h(
      'select',
      { class: 'activity-kind', 'aria-label': 'Kind' },
      h('option', { value: ALL }, 'All kinds'),
      ...AUDIT_KINDS.map((kind) => h('option', { value: kind }, AUDIT_KIND_LABEL[kind])),
    );
    this.person = h('select', { class: 'activity-person', 'aria-label': 'Person' }, h('option', { value: ALL }, 'Everyone'));
    this.kind.addEventListener('change', () => void this.load());
    this.person.addEventListener('change', () => void this.load());
    this.filters = h('div', { class: 'activity-filters' }, this.kind, this.person);
    this.list = h('ol', { class: 'activity-list', 'aria-label': 'Activity, newest first' });
    this.status = h('div', { class: 'activity-status', role: 'status', 'aria-live': 'polite' });
    this.older = h('button', { type: 'button', class: 'button secondary activity-older', hidden: true }, 'Load older');
    this.older.addEventListener('click', () => void this.loadOlder());
    this.panel = h(
      'section',
      { class: 'activity-panel', role: 'dialog', 'aria-modal': 'true', 'aria-label': 'Activity', hidden: true },
      h('header', { class: 'activity-head' }, h('h2', {}, 'Activity'), this.close),
      h('div', { class: 'activity-body' }, this.verdict, this.filters, this.list, this.status, this.older),
    );
    this.panel.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        event.stopPropagation();
        this.hide();
      }
    });
    connection.onEvent((event) => this.onEvent(event));
    // Back after a drop with the screen open: what was recorded meanwhile came as no event.
    let wasOpen = connection.state.state === 'open';
    connection.onState((state) => {
      const open = state.state === 'open';
      if (open && !wasOpen && this.isOpen) this.refresh();
      wasOpen = open;
    });
  }

  get isOpen(): boolean {
    return !this.panel.hidden;
  }

  show(): void {
    this.panel.hidden = false;
    this.close.focus();
    this.refresh();
  }

  private refresh(): void {
    void this.verify();
    void this.load();
  }

  hide(): void {
    if (this.panel.hidden) return;
    this.panel.hidden = true;
    this.button.focus();
  }

  /** The chain checked afresh each time the screen opens: the banner says what verify_audit found. */
  private async verify(): Promise<void> {
    this.verdict.hidden = true;
    const answer = await this.connection.request({ type: 'verify_audit' }).catch(() => undefined);
    if (answer?.status !== 'ok') return; // list_audit's answer says why (not connected, not the owner)
    this.badSeq = answer.data.ok ? null : answer.data.first_bad_seq;
    for (const item of Array.from(this.list.children) as HTMLElement[]) this.markAltered(item);
    this.verdict.hidden = false;
    this.verdict.dataset.ok = String(answer.data.ok);
    this.verdict.setAttribute('role', answer.data.ok ? 'status' : 'alert');
    this.verdict.replaceChildren(h('span', { class: 'activity-verdict-mark', 'aria-hidden': 'true' }, answer.data.ok ? '✓' : '⚠'), h('span', {}, auditVerdictText(answer.data)));
  }

  /** The newest page under the filters chosen, replacing what is shown. */
  private async load(): Promise<void> {
    this.list.replaceChildren();
    this.older.hidden = true;
    await this.fetch(undefined);
  }

  private async loadOlder(): Promise<void> {
    if (this.nextBefore === null) return;
    this.older.disabled = true;
    await this.fetch(this.nextBefore);
    this.older.disabled = false;
  }

  private filterFrame(): { kind?: AuditKind; person?: string } {
    return { ...(this.kind.value ? { kind: this.kind.value as AuditKind } : {}), ...(this.person.value ? { person: this.person.value } : {}) };
  }

  private async fetch(before: number | undefined): Promise<void> {
    const ticket = ++this.asked;
    this.status.textContent = 'Loading…';
    const answer = await this.connection.request({ type: 'list_audit', limit: ACTIVITY_PAGE, ...this.filterFrame(), ...(before !== undefined ? { before } : {}) }).catch(() => undefined);
    if (ticket !== this.asked) return;
    if (!answer) {
      this.status.textContent = 'Not connected.';
      return;
    }
    if (answer.status !== 'ok') {
      const owner = answer.code === 'unauthorized';
      this.filters.hidden = owner;
      this.verdict.hidden = owner || this.verdict.hidden;
      this.status.textContent = owner ? 'Only the owner of this computer can read its activity record. You are signed in with a password.' : answer.error || 'The activity could not be read.';
      this.panel.classList.toggle('refused', owner);
      return;
    }
    this.filters.hidden = false;
    this.panel.classList.remove('refused');
    this.nextBefore = answer.data.next_before;
    this.older.hidden = this.nextBefore === null;
    // An entry told (audit.appended) while the page was on its way is shown already.
    for (const entry of answer.data.entries) if (!this.list.querySelector(`[data-seq="${entry.seq}"]`)) this.list.append(this.item(entry));
    this.notePeople(answer.data.entries);
    const shown = this.list.childElementCount;
    this.status.textContent = shown === 0 ? (this.kind.value || this.person.value ? 'Nothing recorded matches these filters.' : 'Nothing recorded yet.') : '';
  }

  private onEvent(event: ViewEvent): void {
    if (event.event !== 'audit.appended' || !this.isOpen || this.panel.classList.contains('refused')) return;
    const { entry } = event;
    this.notePeople([entry]);
    const filter = this.filterFrame();
    if ((filter.kind && entry.kind !== filter.kind) || (filter.person && entry.person.name !== filter.person)) return;
    if (this.list.querySelector(`[data-seq="${entry.seq}"]`)) return;
    this.list.prepend(this.item(entry));
    this.status.textContent = '';
  }

  private notePeople(entries: AuditEntry[]): void {
    for (const { person } of entries) {
      if (!person.name || this.people.has(person.name)) continue;
      this.people.add(person.name);
      this.person.append(h('option', { value: person.name }, person.name));
    }
  }

  /** One entry: its kind and when, what, then who and from where; tapped, the exact time and the entry's facts. */
  private item(entry: AuditEntry): HTMLLIElement {
    const exact = new Date(entry.at);
    const exactText = exact.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'long' });
    const toggle = h(
      'button',
      { type: 'button', class: 'activity-entry-toggle', 'aria-expanded': 'false' },
      h(
        'span',
        { class: 'activity-top' },
        h('span', { class: 'activity-kind-badge' }, AUDIT_KIND_LABEL[entry.kind] ?? entry.kind),
        h('time', { class: 'activity-when', datetime: entry.at, title: exactText }, relativeTime(entry.at)),
      ),
      h('span', { class: 'activity-summary' }, auditSummaryText(entry)),
      h(
        'span',
        { class: 'activity-meta' },
        h('span', { class: 'activity-who' }, auditPersonLabel(entry.person)),
        auditPlaceIsPerson(entry) ? null : h('span', { class: 'activity-where' }, auditPlaceLabel(entry.place)),
      ),
    );
    const details = h('div', { class: 'activity-details', hidden: true });
    toggle.addEventListener('click', () => {
      const open = details.hidden;
      if (open && !details.firstChild) details.append(...this.details(entry, exactText));
      details.hidden = !open;
      toggle.setAttribute('aria-expanded', String(open));
    });
    return this.markAltered(h('li', { class: 'activity-entry', 'data-seq': entry.seq, 'data-kind': entry.kind }, toggle, details));
  }

  private markAltered<E extends HTMLElement>(item: E): E {
    const altered = this.badSeq !== null && item.dataset.seq === String(this.badSeq);
    item.classList.toggle('altered', altered);
    item.querySelector('.activity-altered')?.remove();
    if (altered) item.querySelector('.activity-top')?.after(h('span', { class: 'activity-altered' }, 'The record breaks here: this entry or the one before it was changed or removed'));
    return item;
  }

  private details(entry: AuditEntry, exactText: string): Node[] {
    const facts = auditFacts(entry.detail);
    const nodes: Node[] = [h('div', { class: 'activity-exact' }, `Entry #${entry.seq} · ${exactText}`)];
    // The line as the record keeps it (what its hash covers), when the summary above words it otherwise.
    if (auditSummaryText(entry) !== entry.summary) nodes.push(h('div', { class: 'activity-recorded' }, `Recorded as “${entry.summary}”`));
    if (facts.length > 0) {
      nodes.push(h('dl', { class: 'activity-facts' }, ...facts.flatMap(([name, text]) => [h('dt', {}, name), h('dd', {}, text)])));
    }
    if (entry.conversation_id) {
      const conversationId = entry.conversation_id;
      const open = h('button', { type: 'button', class: 'button secondary activity-conversation' }, 'Open the conversation');
      open.addEventListener('click', () => {
        this.hide();
        this.handlers.open(conversationId);
      });
      nodes.push(open);
    }
    return nodes;
  }
}
