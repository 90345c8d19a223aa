import { z } from 'zod';
import { RequestId } from './envelope';

/**
 * A command frame's schema: its `type`, the client's optional request `id`, and its own fields.
 * Unknown fields are ignored (z.object strips them): docs/protocol.md, "Envelope".
 */
export const command = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), id: RequestId.optional(), ...shape });
