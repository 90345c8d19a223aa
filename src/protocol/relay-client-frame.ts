/**
 * The relay's own frames as the phone reads them, without zod (the browser bundle carries no schema
 * runtime): typed by RelayClientFrame (relay-frames.ts), and held to that schema by
 * test/relay/relay-frames.test.ts, which feeds both the same texts.
 */
import type { RelayClientFrame } from './relay-frames';

/**
 * A text from the relay socket: a RelayClientFrame; `null` for a frame of the relay's (it has a
 * `relay` field) of no known shape, to be ignored; undefined for anything else (a tunnel frame).
 */
export function readRelayClientFrame(text: string): RelayClientFrame | null | undefined {
  // Tunnel frames are base64 boxes: no need to parse them to know they are not the relay's.
  if (!text.includes('"relay"')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const frame = value as Record<string, unknown>;
  if (typeof frame.relay !== 'string') return undefined;
  if (frame.relay === 'status' && (frame.machine === 'online' || frame.machine === 'offline')) return { relay: 'status', machine: frame.machine };
  if (frame.relay === 'error' && typeof frame.code === 'string' && typeof frame.error === 'string') return { relay: 'error', code: frame.code, error: frame.error };
  return null;
}
