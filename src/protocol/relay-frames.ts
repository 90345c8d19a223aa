import * as z from 'zod';
import { firstUtf8Bytes, wellFormed } from './code-points';
import { lazySchema } from './lazy-schema';

/**
 * The frames of the machine socket (docs/relay.md, "Machine socket") and the relay's own frames to
 * clients. The relay (src/relay), the service's relay link (src/transport/relay-link) and the phone
 * (src/web/relay-wire.ts, through relay-client-frame.ts) all read and write these shapes.
 */

/** The relay's opaque id of one client connection. */
export const ClientId = lazySchema(() => z.string().min(1).max(64));

/** Machine -> relay. */
export const MachineDataFrame = lazySchema(() => z.object({ t: z.literal('data'), c: ClientId, d: z.string() }));
export const MachineCloseFrame = lazySchema(() =>
  z.object({
    t: z.literal('close'),
    c: ClientId,
    code: z.number().int().min(4000).max(4999).optional(),
    reason: z.string().optional(),
  }),
);
/**
 * A WebSocket close reason as the wire holds it: at most 123 bytes of UTF-8 (RFC 6455; `ws` throws on a
 * longer one), cut between whole characters, each lone surrogate U+FFFD. The relay clamps a machine's close
 * frame's `reason` with it, the relay link the reasons it sends.
 */
export function clampCloseReason(reason: string): string {
  // Cut first (a lone surrogate counts the 3 bytes of its U+FFFD): a machine's long reason is never copied whole.
  return wellFormed(firstUtf8Bytes(reason, 123));
}
export const MachineFrame = lazySchema(() => z.discriminatedUnion('t', [MachineDataFrame, MachineCloseFrame]));
export type MachineFrame = z.infer<typeof MachineFrame>;

/** Relay -> machine. */
export const RelayToMachineFrame = lazySchema(() =>
  z.discriminatedUnion('t', [
    /** `a`: the relay's key of the client's address (its IPv4 address or IPv6 /64), for the machine's per-address limits; older relays omit it. */
    z.object({ t: z.literal('open'), c: ClientId, a: z.string().max(64).optional() }),
    z.object({ t: z.literal('data'), c: ClientId, d: z.string() }),
    z.object({ t: z.literal('close'), c: ClientId }),
  ]),
);
export type RelayToMachineFrame = z.infer<typeof RelayToMachineFrame>;

/** Relay -> client: the relay's own frames always carry a `relay` field; service frames never do. */
export const RelayStatusFrame = lazySchema(() => z.object({ relay: z.literal('status'), machine: z.enum(['online', 'offline']) }));
export const RelayErrorFrame = lazySchema(() => z.object({ relay: z.literal('error'), code: z.string(), error: z.string() }));
export const RelayClientFrame = lazySchema(() => z.discriminatedUnion('relay', [RelayStatusFrame, RelayErrorFrame]));
export type RelayClientFrame = z.infer<typeof RelayClientFrame>;

/** JSON text parsed with `schema`; undefined when it is not JSON or not of that shape. */
export function parseFrame<S extends z.ZodType>(schema: S, text: string): z.infer<S> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}
