/**
 * The phone's pairing (service WebSocket URL + token). It arrives in the page URL's fragment
 * (`#url=...&token=...` on the LAN, `#relay=...&machine_key=...&pair=...&token=...` through the relay,
 * docs/relay.md §Pairing), which browsers never send to a server, is kept in localStorage, and the
 * fragment is removed from the address bar at once so the token is not left on screen or in history.
 */
import { bytesOfLength } from '../tunnel/base64url';

export interface Pairing {
  /** The service's `/ws`, or the relay's client socket for the machine (with `machine_id`). */
  url: string;
  token: string;
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
  const token = params.get('token');
  if (!token) return undefined;
  const relayUrl = params.get('relay');
  if (relayUrl) {
    const relay = relayPairingOf({ machineKey: params.get('machine_key'), pair: params.get('pair') ?? undefined });
    if (!relay || !/^wss?:\/\//i.test(relayUrl)) return undefined;
    return { url: relayUrl, token, relay };
  }
  const url = params.get('url') ?? (location ? defaultUrl(location) : undefined);
  if (!url || !/^wss?:\/\//i.test(url)) return undefined;
  return { url, token };
}

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

/** The pairing secret is spent once the machine accepted this phone: drop it from the stored pairing. */
export function markPaired(storage: Storage = window.localStorage): void {
  const stored = readStored(storage);
  if (stored?.relay?.pair) savePairing({ ...stored, relay: { machineKey: stored.relay.machineKey } }, storage);
}

function relayPairingOf(value: { machineKey?: unknown; pair?: unknown }): RelayPairing | undefined {
  if (!bytesOfLength(value.machineKey, 32)) return undefined;
  const pair = typeof value.pair === 'string' && value.pair.length > 0 && value.pair.length <= 256 ? value.pair : undefined;
  return { machineKey: value.machineKey as string, ...(pair ? { pair } : {}) };
}

function readStored(storage: Storage): Pairing | undefined {
  try {
    const value = JSON.parse(storage.getItem(STORAGE_KEY) ?? 'null') as Partial<Pairing> | null;
    if (value && typeof value.url === 'string' && typeof value.token === 'string' && value.token) {
      if (value.relay === undefined) return { url: value.url, token: value.token };
      const relay = relayPairingOf(value.relay);
      if (relay) return { url: value.url, token: value.token, relay };
    }
  } catch {
    // Corrupt entry: treat as unpaired.
  }
  return undefined;
}
