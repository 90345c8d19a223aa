import { ServiceError } from '../../protocol/errors';
import { MARK_CLOSE, MARK_OPEN } from './marks';

/** Words of a query used (more only narrow the result further and cost time). */
const MAX_WORDS = 16;
/** A word FTS5's unicode61 tokenizer keeps something of: a letter or a digit. */
const SEARCHABLE = /[\p{L}\p{N}]/u;

/**
 * The FTS5 expression for a user's query: every word must match, each quoted (so `AND`, `NEAR`, `*`,
 * `"` or `:` typed by a user are plain text), the last one as a prefix (results while typing).
 */
export function toMatchExpression(query: string): string {
  const words = query
    .split(/\s+/)
    .filter((w) => SEARCHABLE.test(w))
    .slice(0, MAX_WORDS);
  if (words.length === 0) throw new ServiceError('invalid_request', 'the search query has no word to look for (letters or digits)');
  return words.map((w, i) => `"${w.replace(/"/g, '""')}"${i === words.length - 1 ? '*' : ''}`).join(' ');
}

/** A snippet without its markers, and where the markers were: [start, end) in the returned text. */
export function parseSnippet(marked: string): { snippet: string; highlights: Array<[number, number]> } {
  let snippet = '';
  const highlights: Array<[number, number]> = [];
  let start = -1;
  for (const ch of marked) {
    if (ch === MARK_OPEN) start = snippet.length;
    else if (ch === MARK_CLOSE) {
      if (start >= 0) highlights.push([start, snippet.length]);
      start = -1;
    } else snippet += ch;
  }
  return { snippet, highlights };
}
