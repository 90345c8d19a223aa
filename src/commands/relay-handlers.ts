import type { CommandOf, ResultOf } from '../protocol';
import type { CommandContext } from './context';
import type { ClientSession } from './session';

/**
 * `create_pairing`: a one-time pairing for a phone through a relay channel. Its secret is spent for a
 * device credential with the owner's rights, so only the owner may ask (roles.ts, OWNER_ONLY_COMMANDS).
 */
export async function createPairing(command: CommandOf<'create_pairing'>, _session: ClientSession, ctx: CommandContext): Promise<ResultOf<'create_pairing'>> {
  return ctx.relay.createPairing(command.channel);
}

export async function relayStatus(_command: CommandOf<'relay_status'>, _session: ClientSession, ctx: CommandContext): Promise<ResultOf<'relay_status'>> {
  return { relays: ctx.relay.status() };
}
