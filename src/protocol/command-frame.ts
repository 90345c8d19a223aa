import * as z from 'zod';
import { isWellFormed } from './code-points';
import { isRequestId, RequestId } from './envelope';
import { lazySchema } from './lazy-schema';

/** Every command's `id` field, one instance: isBareCommand knows a command that redefines it by this. */
const COMMAND_ID = lazySchema(() => RequestId.optional());

/**
 * A command frame's schema: its `type`, the client's optional request `id`, and its own fields.
 * Unknown fields are ignored (z.object strips them): docs/protocol.md, "Envelope".
 */
export const command = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) => z.object({ type: z.literal(type), id: COMMAND_ID, ...shape });

/** Maximum `limit` of list commands; larger values are clamped (docs/protocol.md). */
export const MAX_LIST_LIMIT = 500;
export const DEFAULT_LIST_LIMIT = 50;

/** A list command's `limit`: clamped to MAX_LIST_LIMIT, DEFAULT_LIST_LIMIT when left out. */
export const listLimit = lazySchema(() =>
  z
    .number({ error: 'expected an integer' })
    .int({ error: 'expected an integer' })
    .min(1, { error: 'must be at least 1' })
    .transform((n) => Math.min(n, MAX_LIST_LIMIT))
    .default(DEFAULT_LIST_LIMIT),
);

/** A required string field (an id, a query) that must not be empty; `what` names it in the error. */
export const nonEmpty = (what: string) => z.string({ error: `${what} must be a string` }).min(1, { error: `${what} must not be empty` });

/** Longest `client_message_id` (a UUID is 36). */
export const MAX_CLIENT_MESSAGE_ID_CHARS = 128;

/**
 * A chat's `client_message_id` (a chat's, a queued one's, a comment on a change's). Its resend key is
 * stored with the message and looked up by equality in sql.js and, once cold, in history.db: both bind
 * text as UTF-8, which cannot hold a lone UTF-16 surrogate (each reads it back otherwise), so such a key
 * is refused here rather than changed.
 */
export const ClientMessageId = lazySchema(() => clientId('client_message_id'));

/** An id a client makes for a request of its own (`what` names the field): 1..128 whole characters. */
export const clientId = (what: string) =>
  nonEmpty(what)
    .max(MAX_CLIENT_MESSAGE_ID_CHARS, { error: `${what} must be at most ${MAX_CLIENT_MESSAGE_ID_CHARS} characters` })
    .refine(isWellFormed, { error: `${what} holds a lone UTF-16 surrogate (half of a character): make it of whole characters` });

/** The frame's `id` when it is a valid one, so even a refused frame's error can be matched by its client. */
export function requestIdOf(frame: unknown): RequestId | undefined {
  if (frame === null || typeof frame !== 'object') return undefined;
  const parsed = RequestId.safeParse((frame as { id?: unknown }).id);
  return parsed.success ? parsed.data : undefined;
}

/**
 * Whether a command's schema holds nothing but `type` and the optional `id` (get_config, list_tools, ...):
 * its frames may be read by bareCommandOf instead of zod.
 */
export function isBareCommand(schema: z.ZodObject): boolean {
  const keys = Object.keys(schema.shape);
  // No refinement and no rule for other keys (a strict object refuses them): nothing zod would check beyond the id.
  const { checks, catchall } = schema._zod.def;
  // And those two are the plain ones: a command redefining `id` (its own rule) or `type` (a transform) is zod's.
  const { type, id } = schema.shape as { type?: unknown; id?: unknown };
  return keys.length === 2 && id === COMMAND_ID && type instanceof z.ZodLiteral && !checks?.length && catchall === undefined;
}

/**
 * A bare command's frame (isBareCommand) read without zod: `{ type, id }` with the other fields dropped,
 * as zod's parse makes it; undefined when the id is not plainly good (not a finite number, nor a string of
 * at most 128 UTF-16 units): then zod's parse decides and says why. Never accepts what zod refuses
 * (test/service/bare-commands.test.ts); zod's parse was a fifth of a get_config round trip's server time
 * (`npm run bench -- ws`, issue 25).
 */
export function bareCommandOf(type: string, frame: { id?: unknown }): { type: string; id?: RequestId } | undefined {
  const id = frame.id;
  if (id === undefined) return { type };
  return isRequestId(id) ? { type, id } : undefined;
}
