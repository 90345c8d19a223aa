import { z } from 'zod';
import type { ErrorCode } from '../protocol/errors';

/**
 * The frames of the machine socket (docs/relay.md, "Machine socket") and the relay's own frames to
 * clients. The relay-link on the service side speaks the same shapes; these schemas are their truth.
 */

/** The relay's opaque id of one client connection. */
export const ClientId = z.string().min(1).max(64);

/** Machine -> relay. */
export const MachineDataFrame = z.object({ t: z.literal('data'), c: ClientId, d: z.string() });
export const MachineCloseFrame = z.object({
  t: z.literal('close'),
  c: ClientId,
  code: z.number().int().min(4000).max(4999).optional(),
  reason: z.string().optional(),
});
export const MachineFrame = z.discriminatedUnion('t', [MachineDataFrame, MachineCloseFrame]);
export type MachineFrame = z.infer<typeof MachineFrame>;

/** Relay -> machine. */
export const RelayToMachineFrame = z.discriminatedUnion('t', [
  z.object({ t: z.literal('open'), c: ClientId }),
  z.object({ t: z.literal('data'), c: ClientId, d: z.string() }),
  z.object({ t: z.literal('close'), c: ClientId }),
]);
export type RelayToMachineFrame = z.infer<typeof RelayToMachineFrame>;

/** Relay -> client: the relay's own frames always carry a `relay` field; service frames never do. */
export const RelayStatusFrame = z.object({ relay: z.literal('status'), machine: z.enum(['online', 'offline']) });
export const RelayErrorFrame = z.object({ relay: z.literal('error'), code: z.string(), error: z.string() });
export const RelayClientFrame = z.discriminatedUnion('relay', [RelayStatusFrame, RelayErrorFrame]);
export type RelayClientFrame = z.infer<typeof RelayClientFrame>;

export const openFrame = (cid: string) => JSON.stringify({ t: 'open', c: cid });
export const closeFrame = (cid: string) => JSON.stringify({ t: 'close', c: cid });
export const dataFrame = (cid: string, data: string) => JSON.stringify({ t: 'data', c: cid, d: data });
export const statusFrame = (online: boolean) => JSON.stringify({ relay: 'status', machine: online ? 'online' : 'offline' });
export const relayErrorFrame = (code: ErrorCode, error: string) => JSON.stringify({ relay: 'error', code, error });

/** A machine's frame, or undefined when it is not one (bad JSON, unknown `t`, bad fields). */
export function parseMachineFrame(text: string): MachineFrame | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = MachineFrame.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** Whether the UTF-8 form of `text` is longer than `limit` bytes; encodes only when its UTF-16 length cannot tell. */
export function utf8LengthExceeds(text: string, limit: number): boolean {
  // Every UTF-16 unit takes 1 to 3 UTF-8 bytes (a surrogate pair, two units, takes 4).
  if (text.length > limit) return true;
  if (text.length * 3 <= limit) return false;
  return new TextEncoder().encode(text).length > limit;
}

/** A WebSocket close reason fits in 123 UTF-8 bytes. */
export function clampCloseReason(reason: string): string {
  let out = reason.slice(0, 123);
  while (new TextEncoder().encode(out).length > 123) out = out.slice(0, -1);
  return out;
}
