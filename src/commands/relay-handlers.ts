import { ServiceError, type CommandOf, type ResultOf } from '../protocol';
import type { CommandContext } from './context';
import type { ClientSession } from './session';

/**
 * `create_pairing`: a one-time pairing for a phone through a relay channel. The link it returns holds
 * the service's access token, so only a client that authenticated with that token may ask (not a
 * session-token user, not the editor's webview).
 */
export async function createPairing(command: CommandOf<'create_pairing'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'create_pairing'>> {
  if (session.principal !== 'access') throw new ServiceError('unauthorized', 'create_pairing needs a connection authenticated with the access token');
  return ctx.relay.createPairing(command.channel);
}

export async function relayStatus(_command: CommandOf<'relay_status'>, _session: ClientSession, ctx: CommandContext): Promise<ResultOf<'relay_status'>> {
  return { relays: ctx.relay.status() };
}
