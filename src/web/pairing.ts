/**
 * The phone's pairing (service WebSocket URL + this device's credential). It arrives in the page URL's
 * fragment (`#url=...&pair=...` on the LAN, `#relay=...&machine_key=...&pair=...` through the relay,
 * docs/relay.md §Pairing; `token=` still works for a token typed or given by hand), which browsers
 * never send to a server, is kept in localStorage, and the fragment is removed from the address bar at
 * once. The one-time `pair` secret is spent in the first `auth` for the device's own token, which
 * replaces it (docs/protocol.md, "Devices").
 */
import { bytesOfLength } from '../tunnel/base64url';

export interface Pairing {
  /** The service's `/ws`, or the relay's client socket for the machine (with `machine_id`). */
  url: string;
  /** The device's own credential (or a token given by hand); '' until `pair` is spent for one. */
  token: string;
  /** The one-time pairing secret, until `auth` spent it for a device token. */
  pair?: string;
  /** Through the relay: the machine's public key, and the one-time pairing secret until it is spent. */
  relay?: RelayPairing;
}

export interface RelayPairing {
  machineKey: string;
  pair?: string;
}

const STORAGE_KEY = 'remote-assistant.pairing';

/** The pairing from the fragment (remembered, fragment cleared), else the remembered one. */
export function loadPairing(location: Location = window.location, storage: Storage = window.localStorage, history: History = window.history): Pairing | undefined {
  const fromFragment = parseFragment(location.hash, location);
  if (fromFragment) {
    savePairing(fromFragment, storage);
    history.replaceState(history.state, '', location.pathname + location.search);
    return fromFragment;
  }
  return readStored(storage);
}

export function parseFragment(hash: string, location?: Pick<Location, 'protocol' | 'host'>): Pairing | undefined {
  if (!hash || hash.length < 2) return undefined;
  const params = new URLSearchParams(hash.slice(1));
  const token = params.get('token') ?? '';
  const pair = secretOf(params.get('pair'));
  if (!token && !pair) return undefined;
  const secret = pair ? { pair } : {};
  const relayUrl = params.get('relay');
  if (relayUrl) {
    const relay = relayPairingOf({ machineKey: params.get('machine_key'), pair });
    if (!relay || !/^wss?:\/\//i.test(relayUrl)) return undefined;
    return { url: relayUrl, token, ...secret, relay };
  }
  const url = params.get('url') ?? (location ? defaultUrl(location) : undefined);
  if (!url || !/^wss?:\/\//i.test(url)) return undefined;
  return { url, token, ...secret };
}

const secretOf = (value: unknown) => (typeof value === 'string' && value.length > 0 && value.length <= 256 ? value : undefined);

/** The service's `/ws` on the host that served the page (when the service serves it itself). */
export function defaultUrl(location: Pick<Location, 'protocol' | 'host'>): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}

export function savePairing(pairing: Pairing, storage: Storage = window.localStorage): void {
  try {
    storage.setItem(STORAGE_KEY, JSON.stringify(pairing));
  } catch {
    // Private mode without storage: the pairing lasts for this page only.
  }
}

export function forgetPairing(storage: Storage = window.localStorage): void {
  try {
    storage.removeItem(STORAGE_KEY);
  } catch {
    // Nothing stored.
  }
}

/** The relay machine accepted this phone's key: the secret's proof is spent (its `auth` still spends the secret itself). */
export function markPaired(storage: Storage = window.localStorage): void {
  const stored = readStored(storage);
  if (stored?.relay?.pair) savePairing({ ...stored, relay: { machineKey: stored.relay.machineKey } }, storage);
}

/** The service gave this device its own credential: keep it, and forget the spent pairing secret. */
export function saveDeviceToken(token: string, storage: Storage = window.localStorage): void {
  const stored = readStored(storage);
  if (!stored) return;
  const { pair: _spent, ...rest } = stored;
  savePairing({ ...rest, token }, storage);
}

function relayPairingOf(value: { machineKey?: unknown; pair?: unknown }): RelayPairing | undefined {
  if (!bytesOfLength(value.machineKey, 32)) return undefined;
  const pair = secretOf(value.pair);
  return { machineKey: value.machineKey as string, ...(pair ? { pair } : {}) };
}

function readStored(storage: Storage): Pairing | undefined {
  try {
    const value = JSON.parse(storage.getItem(STORAGE_KEY) ?? 'null') as Partial<Pairing> | null;
    const pair = secretOf(value?.pair);
    if (value && typeof value.url === 'string' && typeof value.token === 'string' && (value.token || pair)) {
      const base = { url: value.url, token: value.token, ...(pair ? { pair } : {}) };
      if (value.relay === undefined) return base;
      const relay = relayPairingOf(value.relay);
      if (relay) return { ...base, relay };
    }
  } catch {
    // Corrupt entry: treat as unpaired.
  }
  return undefined;
}
