import * as z from 'zod';
import { MAX_CONTEXT_ITEMS, MAX_CONTEXT_PATH_CHARS, type ContextItem } from './chat-context';
import { lazySchema } from './lazy-schema';

const line = lazySchema(() => z.number({ error: 'expected an integer' }).int({ error: 'expected an integer' }).min(1, { error: 'lines count from 1' }));

const ContextRange = lazySchema(() =>
  z.object({ start_line: line, end_line: line }).refine((range) => range.end_line >= range.start_line, { error: 'end_line must not be before start_line', path: ['end_line'] }),
);

const ContextItemSchema = lazySchema(
  () =>
    z.object({
      kind: z.enum(['selection', 'file'], { error: 'kind must be "selection" or "file"' }),
      path: z
        .string({ error: 'path must be a string' })
        .min(1, { error: 'path must not be empty' })
        .max(MAX_CONTEXT_PATH_CHARS, { error: `path must be at most ${MAX_CONTEXT_PATH_CHARS} characters` }),
      range: ContextRange.optional(),
      text: z.string({ error: 'text must be a string' }),
    }) satisfies z.ZodType<ContextItem>,
);

/** `chat`'s `context` (and a stored message's): see chat-context.ts. */
export const ChatContext = lazySchema(() => z.array(ContextItemSchema, { error: 'context must be an array' }).max(MAX_CONTEXT_ITEMS, { error: `context holds at most ${MAX_CONTEXT_ITEMS} items` }));
