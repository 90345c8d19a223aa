/**
 * The phone's pairing (service WebSocket URL + token). It arrives in the page URL's fragment
 * (`#url=...&token=...`), which browsers never send to a server, is kept in localStorage, and the
 * fragment is removed from the address bar at once so the token is not left on screen or in history.
 */
export interface Pairing {
  url: string;
  token: string;
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

function readStored(storage: Storage): Pairing | undefined {
  try {
    const value = JSON.parse(storage.getItem(STORAGE_KEY) ?? 'null') as Partial<Pairing> | null;
    if (value && typeof value.url === 'string' && typeof value.token === 'string' && value.token) return { url: value.url, token: value.token };
  } catch {
    // Corrupt entry: treat as unpaired.
  }
  return undefined;
}
