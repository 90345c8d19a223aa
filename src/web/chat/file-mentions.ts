/**
 * `#file` mentions in the chat input (the editor's view): typing `#` and part of a path lists matching
 * workspace files (the extension answers: protocol/bridge.ts, EditorLookup); picking one writes
 * `#<path>` into the text and adds the file as a chip, which is what is sent.
 */
import type { ContextItem, EditorLookup, EditorLookupResult } from '../../protocol';
import { h } from './dom';

/** The `#query` right before the caret (after a blank or at the start). */
const MENTION = /(?:^|\s)#([^\s#]*)$/;
const TYPING_PAUSE_MS = 80;

export interface FileMentionsOptions {
  input: HTMLTextAreaElement;
  /** Keys are read here first (capture), so Enter picks a file instead of sending. */
  keyTarget: HTMLElement;
  lookup(lookup: EditorLookup): Promise<EditorLookupResult>;
  pick(item: ContextItem): void;
  error(message: string): void;
}

export class FileMentions {
  readonly element: HTMLUListElement;
  private matches: string[] = [];
  private selected = 0;
  private query: { text: string; start: number } | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Answers to older keystrokes are dropped. */
  private asked = 0;

  constructor(private readonly options: FileMentionsOptions) {
    this.element = h('ul', { class: 'mention-list', role: 'listbox', 'aria-label': 'Workspace files', hidden: true });
    options.input.addEventListener('input', () => this.onInput());
    options.input.addEventListener('blur', () => setTimeout(() => this.close(), 150));
    options.keyTarget.addEventListener('keydown', (event) => this.onKey(event), true);
  }

  private onInput(): void {
    const { input } = this.options;
    const before = input.value.slice(0, input.selectionStart ?? input.value.length);
    const found = MENTION.exec(before);
    if (!found) return this.close();
    this.query = { text: found[1], start: before.length - found[1].length - 1 };
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.ask(found[1]), TYPING_PAUSE_MS);
  }

  private async ask(text: string): Promise<void> {
    const asked = ++this.asked;
    const answer = await this.options.lookup({ files: text }).catch((): EditorLookupResult => ({ files: [] }));
    if (asked !== this.asked || !this.query) return;
    this.matches = 'files' in answer ? answer.files : [];
    this.selected = 0;
    this.render();
  }

  private onKey(event: KeyboardEvent): void {
    if (this.element.hidden || this.matches.length === 0) return;
    const keys: Record<string, () => void> = {
      ArrowDown: () => this.move(1),
      ArrowUp: () => this.move(-1),
      Enter: () => void this.pick(this.matches[this.selected]),
      Tab: () => void this.pick(this.matches[this.selected]),
      Escape: () => this.close(),
    };
    const act = keys[event.key];
    if (!act || event.isComposing) return;
    event.preventDefault();
    event.stopPropagation();
    act();
  }

  private move(by: number): void {
    this.selected = (this.selected + by + this.matches.length) % this.matches.length;
    this.render();
  }

  private async pick(path: string | undefined): Promise<void> {
    const query = this.query;
    this.close();
    if (!path || !query) return;
    const { input } = this.options;
    const end = query.start + 1 + query.text.length;
    const mention = `#${path} `;
    input.value = `${input.value.slice(0, query.start)}${mention}${input.value.slice(end)}`;
    input.selectionStart = input.selectionEnd = query.start + mention.length;
    input.dispatchEvent(new Event('input'));
    input.focus();
    const answer = await this.options.lookup({ file: path }).catch((error: unknown): EditorLookupResult => ({ error: String(error) }));
    if ('item' in answer) this.options.pick(answer.item);
    else if ('error' in answer) this.options.error(`Could not attach ${path}: ${answer.error}`);
  }

  private render(): void {
    this.element.replaceChildren(
      ...this.matches.map((path, index) =>
        h(
          'li',
          {
            class: 'mention',
            role: 'option',
            'aria-selected': String(index === this.selected),
            // mousedown, not click: the input keeps its focus (and caret).
            onmousedown: (event: Event) => {
              event.preventDefault();
              void this.pick(path);
            },
          },
          path,
        ),
      ),
    );
    this.element.hidden = this.matches.length === 0;
    this.element.querySelector('[aria-selected="true"]')?.scrollIntoView?.({ block: 'nearest' });
  }

  private close(): void {
    clearTimeout(this.timer);
    this.asked += 1;
    this.query = undefined;
    this.matches = [];
    this.element.hidden = true;
    this.element.replaceChildren();
  }
}
