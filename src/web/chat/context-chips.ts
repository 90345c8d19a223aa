/**
 * The chips of the chat input (the editor's view): what will be sent with the next message as its
 * `context` (docs/protocol.md, "Context"). A chip shows its file and lines; what is sent is exactly the
 * chips shown attached. Chips come from the editor ("Ask Remote Assistant" on a selection, `#file`
 * mentions) and the active file, which is offered as a chip the user attaches or detaches with a click.
 * On the phone no chip ever comes, and the bar stays hidden.
 */
import type { ContextItem } from '../../protocol';
import { h } from './dom';
import { readKept, writeKept, type KeptStorage } from './kept-list';

/** `math.ts:3-5`: the file's name and the lines, as a chip reads. */
export function chipLabel(item: ContextItem): string {
  const name = item.path.slice(item.path.lastIndexOf('/') + 1) || item.path;
  if (!item.range) return name;
  return item.range.start_line === item.range.end_line ? `${name}:${item.range.start_line}` : `${name}:${item.range.start_line}-${item.range.end_line}`;
}

function chipTitle(item: ContextItem): string {
  const lines = item.range ? `, lines ${item.range.start_line}-${item.range.end_line}` : '';
  return `${item.kind === 'selection' ? 'Selection of ' : ''}${item.path}${lines} (${item.text.length} characters)`;
}

function sameChip(a: ContextItem, b: ContextItem): boolean {
  return a.kind === b.kind && a.path === b.path && a.range?.start_line === b.range?.start_line && a.range?.end_line === b.range?.end_line;
}

/** The chips a sent message carried, read-only, under its bubble (history and live). */
export function sentChips(context: readonly ContextItem[]): HTMLElement {
  return h(
    'div',
    { class: 'context-chips sent', 'aria-label': 'Attached context' },
    ...context.map((item) => h('span', { class: 'chip', 'data-kind': item.kind, title: chipTitle(item) }, chipLabel(item))),
  );
}

const CHIPS_KEY = 'remote-assistant.chips';

export class ContextChips {
  readonly element: HTMLElement;
  private added: ContextItem[] = [];
  private active: { item: ContextItem; attached: boolean } | undefined;

  /** `storage`: where the chips added are kept for a reload (the phone: those of a message put back); none in the editor's view. */
  constructor(private readonly storage?: KeptStorage) {
    this.element = h('div', { class: 'context-chips', 'aria-label': 'Context sent with the next message', hidden: true });
    // Put back (a message not sent) before a reload, not sent since: there again, as the box's text is.
    this.added = readKept<ContextItem>(storage, CHIPS_KEY, (item) => typeof item.path === 'string' && typeof item.text === 'string');
    this.render();
  }

  /** A chip to send with the next message (the same selection twice is one chip, the newer text). */
  add(item: ContextItem): void {
    this.added = [...this.added.filter((chip) => !sameChip(chip, item)), item];
    this.render();
  }

  /**
   * The active editor's file (null: none). Another file starts attached as the setting says; the same
   * file (its text changed) keeps the user's choice.
   */
  setActive(item: ContextItem | null, attach: boolean): void {
    const attached = this.active && item && this.active.item.path === item.path ? this.active.attached : attach;
    this.active = item ? { item, attached } : undefined;
    this.render();
  }

  /** Exactly what the attached chips show, in their order (the active file last, once). */
  items(): ContextItem[] {
    const items = [...this.added];
    const active = this.active;
    if (active?.attached && !items.some((item) => item.kind === 'file' && item.path === active.item.path)) items.push(active.item);
    return items;
  }

  /** After a send: the chips added for that message go; the active file's stays as it was. */
  clearAdded(): void {
    this.added = [];
    this.render();
  }

  private render(): void {
    writeKept(this.storage, CHIPS_KEY, this.added);
    const chips = this.added.map((item) =>
      h(
        'span',
        { class: 'chip', 'data-kind': item.kind, title: chipTitle(item) },
        h('span', { class: 'chip-label' }, chipLabel(item)),
        h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove ${chipLabel(item)}`, onclick: () => this.remove(item) }, '×'),
      ),
    );
    const active = this.active;
    if (active) {
      const label = chipLabel(active.item);
      chips.push(
        h(
          'button',
          {
            type: 'button',
            class: 'chip active-file',
            'data-kind': 'file',
            'aria-pressed': String(active.attached),
            title: `${active.attached ? 'Attached' : 'Not attached'}: the current file ${active.item.path}. Click to ${active.attached ? 'detach' : 'attach'} it.`,
            onclick: () => {
              active.attached = !active.attached;
              this.render();
            },
          },
          h('span', { class: 'chip-label' }, label),
          h('span', { class: 'chip-note' }, active.attached ? 'current file' : '+ current file'),
        ),
      );
    }
    this.element.replaceChildren(...chips);
    this.element.hidden = chips.length === 0;
  }

  private remove(item: ContextItem): void {
    this.added = this.added.filter((chip) => chip !== item);
    this.render();
  }
}
