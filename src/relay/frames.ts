import type { ErrorCode } from '../protocol/errors';
import { MachineFrame, parseFrame, type RelayClientFrame, type RelayToMachineFrame } from '../protocol/relay-frames';

// The relay's frames, built to the protocol's schemas (protocol/relay-frames.ts), which the relay link and the phone read.
export const openFrame = (cid: string, address: string) => JSON.stringify({ t: 'open', c: cid, a: address } satisfies RelayToMachineFrame);
export const closeFrame = (cid: string) => JSON.stringify({ t: 'close', c: cid } satisfies RelayToMachineFrame);
export const dataFrame = (cid: string, data: string) => JSON.stringify({ t: 'data', c: cid, d: data } satisfies RelayToMachineFrame);
export const statusFrame = (online: boolean) => JSON.stringify({ relay: 'status', machine: online ? 'online' : 'offline' } satisfies RelayClientFrame);
export const relayErrorFrame = (code: ErrorCode, error: string) => JSON.stringify({ relay: 'error', code, error } satisfies RelayClientFrame);

/** A machine's frame, or undefined when it is not one (bad JSON, unknown `t`, bad fields). */
export function parseMachineFrame(text: string): MachineFrame | undefined {
  return parseFrame(MachineFrame, text);
}

/** Whether the UTF-8 form of `text` is longer than `limit` bytes; encodes only when its UTF-16 length cannot tell. */
export function utf8LengthExceeds(text: string, limit: number): boolean {
  // Every UTF-16 unit takes 1 to 3 UTF-8 bytes (a surrogate pair, two units, takes 4).
  if (text.length > limit) return true;
  if (text.length * 3 <= limit) return false;
  return new TextEncoder().encode(text).length > limit;
}
