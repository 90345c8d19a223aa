import { ServiceError, websocketChannelsOf, type CommandOf, type PairingInfo, type RelayLinkStatus } from '../protocol';
import { machineIdentityOf } from '../transport/machine-identity';
import { pairingUrl, relaySocketUrl } from '../transport/pairing-link';
import type { CommandContext } from './context';
import type { ClientSession } from './session';

/**
 * `create_pairing`: a one-time pairing for a phone through a relay channel. The link it returns holds
 * the service's access token, so only a client that authenticated with that token may ask (not a
 * session-token user, not the editor's webview).
 */
export async function createPairing(command: CommandOf<'create_pairing'>, session: ClientSession, ctx: CommandContext): Promise<PairingInfo> {
  if (session.principal !== 'access') throw new ServiceError('unauthorized', 'create_pairing needs a connection authenticated with the access token');
  const channels = websocketChannelsOf(ctx.config.current);
  const channel = command.channel ? channels.find((c) => c.name === command.channel) : channels[0];
  if (!channel) {
    throw new ServiceError(
      command.channel ? 'not_found' : 'invalid_request',
      command.channel ? `no relay channel named ${command.channel.slice(0, 64)}` : 'no relay configured: add a channel of type "websocket" with the relay url to service.json',
    );
  }
  const token = ctx.config.current.auth_token;
  if (!token) throw new ServiceError('server_error', 'the service has no access token yet');
  const { machineId, keyPair } = await machineIdentityOf(ctx.store);
  const { secret, expiresIn } = ctx.pairings.create();
  const relayUrl = relaySocketUrl(channel.url, machineId);
  ctx.logger.info('relay.pairing_created', { channel: channel.name, expires_in: expiresIn });
  return {
    machine_id: machineId,
    machine_key: keyPair.publicKey,
    relay_url: relayUrl,
    pairing_secret: secret,
    expires_in: expiresIn,
    pairing_url: pairingUrl({ channelUrl: channel.url, relayUrl, machineKey: keyPair.publicKey, secret, token }),
  };
}

export async function relayStatus(_command: CommandOf<'relay_status'>, _session: ClientSession, ctx: CommandContext): Promise<{ relays: RelayLinkStatus[] }> {
  return { relays: ctx.relay.status() };
}
