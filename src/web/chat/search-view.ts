/**
 * Search in the conversation drawer: a field searched as you type (search_messages, debounced), hits
 * with their conversation's title and the matched words marked; choosing one opens the conversation at
 * the message. Snippets are the history's text: drawn as text nodes and <mark> elements, never as HTML.
 */
import type { EnvelopeOf, SearchHit } from '../../protocol';
import { h, relativeTime } from './dom';

/** Pause in typing before the search is sent. */
export const SEARCH_DEBOUNCE_MS = 250;
/** Hits asked for: a screenful or two; a longer list is better narrowed by another word. */
export const SEARCH_LIMIT = 30;

export interface SearchViewHandlers {
  search(query: string): Promise<EnvelopeOf<'search_messages'> | undefined>;
  open(hit: SearchHit): void;
}

/** The snippet as nodes: plain text between the highlights, each highlight a <mark>. */
export function snippetNodes(snippet: string, highlights: ReadonlyArray<readonly [number, number]>): Node[] {
  const nodes: Node[] = [];
  let at = 0;
  const ordered = [...highlights].filter(([s, e]) => s >= 0 && e > s && e <= snippet.length).sort((a, b) => a[0] - b[0]);
  for (const [start, end] of ordered) {
    if (start < at) continue; // overlapping ranges: the first one wins
    if (start > at) nodes.push(document.createTextNode(snippet.slice(at, start)));
    nodes.push(h('mark', {}, snippet.slice(start, end)));
    at = end;
  }
  if (at < snippet.length) nodes.push(document.createTextNode(snippet.slice(at)));
  return nodes;
}

const ROLE_LABEL: Record<SearchHit['role'], string> = { user: 'You', assistant: 'Assistant', tool: 'Tool', summary: 'Summary' };

export class SearchView {
  readonly element: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly results: HTMLUListElement;
  private readonly status: HTMLElement;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Answers to an older query than the one typed now are dropped. */
  private asked = 0;

  constructor(private readonly handlers: SearchViewHandlers) {
    this.input = h('input', { type: 'search', class: 'search-input', placeholder: 'Search messages', 'aria-label': 'Search messages', autocomplete: 'off', enterkeyhint: 'search' });
    this.status = h('div', { class: 'search-status', role: 'status', 'aria-live': 'polite' });
    this.results = h('ul', { class: 'search-results', 'aria-label': 'Search results', hidden: true });
    this.element = h('div', { class: 'search', role: 'search' }, this.input, this.status, this.results);
    this.input.addEventListener('input', () => this.schedule());
    this.input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') this.schedule(0);
      if (event.key === 'Escape' && this.input.value) {
        event.stopPropagation();
        this.clear();
      }
    });
  }

  clear(): void {
    this.input.value = '';
    this.asked += 1;
    clearTimeout(this.timer);
    this.show([], '');
  }

  private schedule(delay = SEARCH_DEBOUNCE_MS): void {
    clearTimeout(this.timer);
    const query = this.input.value.trim();
    const ticket = ++this.asked;
    if (!query) return this.show([], '');
    this.timer = setTimeout(() => void this.run(query, ticket), delay);
  }

  private async run(query: string, ticket: number): Promise<void> {
    this.status.textContent = 'Searching…';
    const answer = await this.handlers.search(query);
    if (ticket !== this.asked) return;
    if (!answer) return this.show([], 'Not connected.');
    if (answer.status !== 'ok') return this.show([], answer.error || 'The search failed.');
    const hits = answer.data.hits;
    this.show(hits, hits.length === 0 ? 'No messages match.' : `${hits.length === SEARCH_LIMIT ? `${SEARCH_LIMIT}+` : hits.length} found`);
  }

  private show(hits: SearchHit[], status: string): void {
    this.status.textContent = status;
    this.results.hidden = hits.length === 0;
    this.results.replaceChildren(...hits.map((hit) => this.item(hit)));
  }

  private item(hit: SearchHit): HTMLLIElement {
    const open = h(
      'button',
      { type: 'button', class: 'search-hit' },
      h('span', { class: 'search-hit-title' }, hit.conversation_title || 'Untitled'),
      h('span', { class: 'search-hit-snippet' }, ...snippetNodes(hit.snippet, hit.highlights)),
      h('span', { class: 'search-hit-meta' }, `${ROLE_LABEL[hit.role]} · ${relativeTime(hit.timestamp)}`),
    );
    open.addEventListener('click', () => this.handlers.open(hit));
    return h('li', {}, open);
  }
}
