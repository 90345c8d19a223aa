/**
 * protocol/tool-words.ts's pieces drawn: a `code` piece (a path, a command) as `<code>`, the rest as text; every
 * piece a text node (a model's arguments are never parsed as HTML).
 */
import { h } from './dom';
import type { WordPart } from '../../protocol/tool-words';

export function wordNodes(parts: readonly WordPart[]): (Node | string)[] {
  return parts.map((part) => (part.code ? h('code', {}, part.text) : part.text));
}
