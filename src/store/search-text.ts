// Words of a search query and the snippet of a matching message, for MessagesRepo.search's stand-in
// (replaced by the FTS5 index at merge). Words are split as FTS5's unicode61 tokenizer splits them:
// runs of letters, digits and combining marks; matching ignores case.
import { ServiceError } from '../protocol/errors';

/** At most this many words of a query are used; more add nothing a person would type. */
const MAX_WORDS = 16;
/** Characters of a snippet before and after its first match (about two lines of a phone's screen). */
const SNIPPET_BEFORE = 60;
const SNIPPET_CHARS = 200;

export interface SearchTerms {
  /** Lower-cased, in the query's order; the last one matches as a prefix. */
  words: string[];
  /** Every word as a whole word, the last one as a prefix (global, to find each occurrence). */
  pattern: RegExp;
  /** One regex per word, to check that each one occurs. */
  each: RegExp[];
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const WORD = /[\p{L}\p{N}\p{M}]+/gu;

function wordRegExp(word: string, prefix: boolean, flags: string): RegExp {
  return new RegExp(`(?<![\\p{L}\\p{N}\\p{M}])${escapeRegExp(word)}${prefix ? '' : '(?![\\p{L}\\p{N}\\p{M}])'}`, flags);
}

/** The words of `query`; a query without any is invalid_request. */
export function searchTerms(query: string): SearchTerms {
  const words = (query.toLowerCase().match(WORD) ?? []).slice(0, MAX_WORDS);
  if (words.length === 0) throw new ServiceError('invalid_request', 'query: give at least one word to search for (letters or digits)');
  const last = words.length - 1;
  const alternatives = words.map((w, i) => wordRegExp(w, i === last, 'iu').source);
  return {
    words,
    pattern: new RegExp(alternatives.join('|'), 'giu'),
    each: words.map((w, i) => wordRegExp(w, i === last, 'iu')),
  };
}

/** The snippet of `content` around its first match with the matches' offsets, or null when a word is missing. */
export function snippetOf(content: string, terms: SearchTerms): { snippet: string; highlights: Array<[number, number]> } | null {
  if (!terms.each.every((re) => re.test(content))) return null;
  terms.pattern.lastIndex = 0;
  const first = terms.pattern.exec(content);
  if (!first) return null;
  const start = Math.max(0, first.index - SNIPPET_BEFORE);
  const end = Math.min(content.length, start + SNIPPET_CHARS);
  const body = content.slice(start, end).replace(/\s+/g, ' ');
  const snippet = `${start > 0 ? '…' : ''}${body}${end < content.length ? '…' : ''}`;
  const highlights: Array<[number, number]> = [];
  terms.pattern.lastIndex = 0;
  for (const m of snippet.matchAll(terms.pattern)) highlights.push([m.index, m.index + m[0].length]);
  return { snippet, highlights };
}
