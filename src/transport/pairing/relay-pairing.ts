import { hostname } from 'node:os';
import { ServiceError, websocketChannelsOf, type PairingInfo, type ServiceConfig } from '../../protocol';
import { firstCodePoints } from '../../protocol/code-points';
import type { Logger } from '../../log/logger';
import type { Store } from '../../store';
import { machineIdentityOf } from '../relay-link/machine-identity';
import { relayPairingUrl, relaySocketUrl } from './pairing-link';
import type { PairingSecrets } from './pairing-secrets';

export interface RelayPairingDeps {
  config: () => ServiceConfig;
  store: Store;
  pairings: PairingSecrets;
  logger: Logger;
}

/**
 * A one-time pairing for a phone through a relay channel (`create_pairing`; the command checks who
 * may ask). The link holds a one-time pairing secret, which the phone spends for its own device credential.
 */
export async function createRelayPairing(deps: RelayPairingDeps, channelName: string | undefined): Promise<PairingInfo> {
  const channels = websocketChannelsOf(deps.config());
  const channel = channelName ? channels.find((c) => c.name === channelName) : channels[0];
  if (!channel) {
    throw new ServiceError(
      channelName ? 'not_found' : 'invalid_request',
      channelName ? `no relay channel named ${firstCodePoints(channelName, 64)}` : 'no relay configured: add a channel of type "websocket" with the relay url to service.json',
    );
  }
  const { machineId, keyPair } = await machineIdentityOf(deps.store);
  const { secret, expiresIn } = deps.pairings.create();
  const relayUrl = relaySocketUrl(channel.url, machineId);
  deps.logger.info('relay.pairing_created', { channel: channel.name, expires_in: expiresIn });
  return {
    machine_id: machineId,
    machine_key: keyPair.publicKey,
    relay_url: relayUrl,
    pairing_secret: secret,
    expires_in: expiresIn,
    pairing_url: relayPairingUrl({ channelUrl: channel.url, relayUrl, machineKey: keyPair.publicKey, secret, name: hostname() }),
  };
}
