import { firstCodePoints } from './code-points';
import { PREVIEW_CHARS } from './conversations';

/** A message's first non-empty line, cut at PREVIEW_CHARS characters (a conversation's last_message, a queued message's preview). */
export function previewOf(text: string): string {
  // Line by line from the start: a long message is neither split whole nor spread into characters.
  for (let start = 0; ;) {
    const end = text.indexOf('\n', start);
    const line = (end === -1 ? text.slice(start) : text.slice(start, end)).trim();
    if (line !== '') return firstCodePoints(line, PREVIEW_CHARS);
    if (end === -1) return '';
    start = end + 1;
  }
}
