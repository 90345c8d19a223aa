import { z } from 'zod';

/**
 * Context a client attaches to a chat: what the editor's chips show (a selection, a file), sent
 * exactly as shown (docs/protocol.md, "Context"). The service puts it before the message in the
 * prompt and stores it with the message.
 */

/** Most items one chat may carry. */
export const MAX_CONTEXT_ITEMS = 20;
/** Most characters of `text` summed over a chat's items: a frame stays well under 1 MiB. */
export const MAX_CONTEXT_CHARS = 200_000;
const MAX_CONTEXT_PATH_CHARS = 1_000;

const line = z.number({ error: 'expected an integer' }).int({ error: 'expected an integer' }).min(1, { error: 'lines count from 1' });

export const ContextRange = z
  .object({ start_line: line, end_line: line })
  .refine((range) => range.end_line >= range.start_line, { error: 'end_line must not be before start_line', path: ['end_line'] });

export const ContextItem = z.object({
  kind: z.enum(['selection', 'file'], { error: 'kind must be "selection" or "file"' }),
  /** Relative to the workspace folder (as the chip shows it). */
  path: z.string({ error: 'path must be a string' }).min(1, { error: 'path must not be empty' }).max(MAX_CONTEXT_PATH_CHARS, { error: `path must be at most ${MAX_CONTEXT_PATH_CHARS} characters` }),
  /** 1-based, inclusive: the selected lines. */
  range: ContextRange.optional(),
  text: z.string({ error: 'text must be a string' }),
});
export type ContextItem = z.infer<typeof ContextItem>;

export const ChatContext = z.array(ContextItem, { error: 'context must be an array' }).max(MAX_CONTEXT_ITEMS, { error: `context holds at most ${MAX_CONTEXT_ITEMS} items` });

/** Characters of text a chat's context holds (what MAX_CONTEXT_CHARS bounds). */
export function contextChars(items: readonly ContextItem[]): number {
  return items.reduce((sum, item) => sum + item.text.length, 0);
}
