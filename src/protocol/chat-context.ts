/**
 * Context a client attaches to a chat: what the editor's chips show (a selection, a file), sent
 * exactly as shown (docs/protocol.md, "Context"). The service puts it before the message in the
 * prompt and stores it with the message. No zod here: the chat page uses the limits too.
 */

/** Most items one chat may carry. */
export const MAX_CONTEXT_ITEMS = 20;
/** Most characters of `text` summed over a chat's items: a frame stays well under 1 MiB. */
export const MAX_CONTEXT_CHARS = 200_000;
export const MAX_CONTEXT_PATH_CHARS = 1_000;

export interface ContextItem {
  kind: 'selection' | 'file';
  /** Relative to the workspace folder (as the chip shows it). */
  path: string;
  /** 1-based, inclusive: the selected lines. */
  range?: { start_line: number; end_line: number };
  text: string;
}

/** Characters of text a chat's context holds (what MAX_CONTEXT_CHARS bounds). */
export function contextChars(items: readonly ContextItem[]): number {
  return items.reduce((sum, item) => sum + item.text.length, 0);
}
