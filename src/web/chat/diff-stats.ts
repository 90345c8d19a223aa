/**
 * A change's size, "+12 −3": lines added (green) and removed (red), a side with none left out ("+2"), the signs in the text so colour is
 * not the only cue, and said in words to a screen reader ("12 lines added, 3 removed"). One home for the
 * tool card's line, the prompt's diff and the Changes sheet's files.
 */
import { h } from './dom';

/** `cut`: the diff was cut, so the counts are of what was kept ("at least"). */
export function diffStats(added: number, removed: number, options: { cut?: boolean } = {}): HTMLElement {
  const more = options.cut ? '+' : '';
  // An image of text to a screen reader, named in words: it reads "12 lines added, 3 removed", not "plus 12 minus 3".
  return h(
    'span',
    { class: 'diff-stats', role: 'img', 'aria-label': statsWords(added, removed, options.cut === true) },
    // A side with nothing is left out ("+2" for a new file), unless both are.
    added > 0 || removed === 0 ? h('span', { class: 'diff-stat-add' }, `+${added}${more}`) : null,
    added > 0 && removed > 0 ? ' ' : null,
    removed > 0 || added === 0 ? h('span', { class: 'diff-stat-del' }, `−${removed}${more}`) : null,
  );
}

/** "12 lines added, 3 removed", "1 line added, none removed", "no lines added, 2 removed"; "at least …" for a cut diff. */
export function statsWords(added: number, removed: number, cut = false): string {
  const text = `${added === 0 ? 'no' : added} line${added === 1 ? '' : 's'} added, ${removed === 0 ? 'none' : removed} removed`;
  return cut ? `at least ${text}` : text;
}
