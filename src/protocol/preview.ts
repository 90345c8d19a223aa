import { firstCodePoints, wellFormed } from './code-points';
import { PREVIEW_CHARS } from './conversations';

/**
 * A message's first non-empty line, cut at PREVIEW_CHARS characters (a conversation's last_message, a
 * queued message's preview), well-formed: a queued chat's preview is made from the text as sent, before
 * its message is stored (store/messages.ts checkMessage makes it well-formed), and must read as that will.
 */
export function previewOf(text: string): string {
  // Line by line from the start: a long message is neither split whole nor spread into characters.
  for (let start = 0; ;) {
    const end = text.indexOf('\n', start);
    const line = (end === -1 ? text.slice(start) : text.slice(start, end)).trim();
    if (line !== '') return wellFormed(firstCodePoints(line, PREVIEW_CHARS));
    if (end === -1) return '';
    start = end + 1;
  }
}
