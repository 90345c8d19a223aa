/**
 * One way to send a command that resolves undefined when the connection dropped before the answer (the
 * prompt cards, the rules editor). The page takes the protocol's own types from src/protocol (type-only
 * imports: the bundle holds no zod).
 */
import type { CommandInput, EnvelopeOf } from '../../protocol';
import type { ServiceConnection } from '../connection';

/** Sends a command; resolves its envelope, or undefined when the connection dropped before the answer. */
export async function sendCommand<C extends CommandInput>(connection: ServiceConnection, frame: C): Promise<EnvelopeOf<C['type']> | undefined> {
  try {
    return await connection.request(frame);
  } catch {
    return undefined;
  }
}
