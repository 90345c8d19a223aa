import { z } from 'zod';
import { RequestId } from './envelope';

/**
 * A command frame's schema: its `type`, the client's optional request `id`, and its own fields.
 * Unknown fields are ignored (z.object strips them): docs/protocol.md, "Envelope".
 */
export const command = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) => z.object({ type: z.literal(type), id: RequestId.optional(), ...shape });

/** Maximum `limit` of list commands; larger values are clamped (docs/protocol.md). */
export const MAX_LIST_LIMIT = 500;
export const DEFAULT_LIST_LIMIT = 50;

/** A list command's `limit`: clamped to MAX_LIST_LIMIT, DEFAULT_LIST_LIMIT when left out. */
export const listLimit = z
  .number({ error: 'expected an integer' })
  .int({ error: 'expected an integer' })
  .min(1, { error: 'must be at least 1' })
  .transform((n) => Math.min(n, MAX_LIST_LIMIT))
  .default(DEFAULT_LIST_LIMIT);

/** A required string field (an id, a query) that must not be empty; `what` names it in the error. */
export const nonEmpty = (what: string) => z.string({ error: `${what} must be a string` }).min(1, { error: `${what} must not be empty` });

/** The frame's `id` when it is a valid one, so even a refused frame's error can be matched by its client. */
export function requestIdOf(frame: unknown): RequestId | undefined {
  if (frame === null || typeof frame !== 'object') return undefined;
  const parsed = RequestId.safeParse((frame as { id?: unknown }).id);
  return parsed.success ? parsed.data : undefined;
}
