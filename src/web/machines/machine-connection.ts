/**
 * The connection to one paired machine: a WebSocket to its service on the LAN, or through the relay in
 * the e2e tunnel. A pairing secret is spent in the first `auth` for the device's own credential, which
 * is kept in that machine's pairing (never another's): the holder says where that pairing lives (the
 * machine store for a paired machine, the add sheet's trial for one not added yet).
 */
import { loadClientKeyPair } from '../client-key';
import type { Pairing } from '../pairing';
import { deviceId, deviceName } from '../push/device';
import { RelayWire } from '../relay-wire';
import { WebSocketConnection } from '../websocket-connection';
import type { Machine, MachineStore } from './machine-store';

/** Where one machine's pairing is kept while its connection spends the secret and receives the credential. */
export interface PairingHolder {
  readonly pairing: Pairing;
  update(change: (pairing: Pairing) => Pairing): void;
}

/** The holder of a paired machine: its entry in the store. */
export function storedPairing(machine: Machine, store: MachineStore): PairingHolder {
  return {
    get pairing() {
      return store.find(machine.id)?.pairing ?? machine.pairing;
    },
    update: (change) => store.updatePairing(machine.id, change),
  };
}

export function connectMachine(holder: PairingHolder, timing: { baseDelayMs?: number; maxDelayMs?: number } = {}): WebSocketConnection {
  const { url, token, relay } = holder.pairing;
  return new WebSocketConnection({
    url,
    token,
    ...timing,
    // A QR code's one-time secret: spent in the first `auth` for this device's own credential.
    pairing: () => {
      const secret = holder.pairing.pair;
      return secret ? { pairing_secret: secret, device_id: deviceId(), device_name: deviceName() } : undefined;
    },
    onDeviceToken: (token, device) => holder.update(({ pair: _spent, ...rest }) => ({ ...rest, token, ...(device ? { device } : {}) })),
    createWire: relay
      ? () =>
          new RelayWire({
            keyPair: loadClientKeyPair(),
            machineKey: relay.machineKey,
            pairingSecret: () => holder.pairing.relay?.pair,
            // The machine accepted this phone's key: the proof is spent (its `auth` still spends the secret itself).
            onPaired: () => holder.update((p) => (p.relay?.pair ? { ...p, relay: { machineKey: p.relay.machineKey } } : p)),
          })
      : undefined,
  });
}
