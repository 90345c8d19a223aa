/**
 * The connection to one paired machine: a WebSocket to its service on the LAN, or through the relay in
 * the e2e tunnel. A pairing secret is spent in the first `auth` for the device's own credential, which
 * is kept in that machine's pairing (never another's).
 */
import { loadClientKeyPair } from '../client-key';
import { deviceId, deviceName } from '../push/device';
import { RelayWire } from '../relay-wire';
import { WebSocketConnection } from '../websocket-connection';
import type { Machine, MachineStore } from './machine-store';

export function connectMachine(machine: Machine, store: MachineStore): WebSocketConnection {
  const current = () => store.find(machine.id)?.pairing ?? machine.pairing;
  const relay = machine.pairing.relay;
  return new WebSocketConnection({
    url: machine.pairing.url,
    token: machine.pairing.token,
    // A QR code's one-time secret: spent in the first `auth` for this device's own credential.
    pairing: () => {
      const secret = current().pair;
      return secret ? { pairing_secret: secret, device_id: deviceId(), device_name: deviceName() } : undefined;
    },
    onDeviceToken: (token, device) => store.updatePairing(machine.id, ({ pair: _spent, ...rest }) => ({ ...rest, token, ...(device ? { device } : {}) })),
    createWire: relay
      ? () =>
          new RelayWire({
            keyPair: loadClientKeyPair(),
            machineKey: relay.machineKey,
            pairingSecret: () => current().relay?.pair,
            // The machine accepted this phone's key: the proof is spent (its `auth` still spends the secret itself).
            onPaired: () => store.updatePairing(machine.id, (p) => (p.relay?.pair ? { ...p, relay: { machineKey: p.relay.machineKey } } : p)),
          })
      : undefined,
  });
}
