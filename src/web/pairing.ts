/**
 * A phone's pairing with one machine (service WebSocket URL + this device's credential). It arrives in
 * the page URL's fragment (`#url=...&pair=...` on the LAN, `#relay=...&machine_key=...&pair=...` through
 * the relay, docs/relay.md §Pairing; `token=` still works for a token typed or given by hand), which
 * browsers never send to a server. The phone keeps one pairing per machine (machines/machine-store.ts).
 * The one-time `pair` secret is spent in the first `auth` for the device's own token, which replaces it
 * (docs/protocol.md, "Devices").
 */
import { firstCodePoints } from '../protocol/code-points';
import { displayName, readsAs } from '../protocol/display-name';
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
  /** This phone's `device_id` on that machine (to revoke its own credential when the machine is removed). */
  device?: string;
}

export interface RelayPairing {
  machineKey: string;
  pair?: string;
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

function relayPairingOf(value: { machineKey?: unknown; pair?: unknown }): RelayPairing | undefined {
  if (!bytesOfLength(value.machineKey, 32)) return undefined;
  const pair = secretOf(value.pair);
  return { machineKey: value.machineKey as string, ...(pair ? { pair } : {}) };
}

/** A stored pairing checked field by field; undefined for anything else (a corrupt entry is unpaired). */
export function readPairing(value: unknown): Pairing | undefined {
  const stored = value as Partial<Pairing> | null | undefined;
  const pair = secretOf(stored?.pair);
  if (!stored || typeof stored.url !== 'string' || typeof stored.token !== 'string' || !(stored.token || pair)) return undefined;
  const device = typeof stored.device === 'string' ? { device: stored.device } : {};
  const base = { url: stored.url, token: stored.token, ...(pair ? { pair } : {}), ...device };
  if (stored.relay === undefined) return base;
  const relay = relayPairingOf(stored.relay);
  return relay ? { ...base, relay } : undefined;
}

/**
 * The machine's name a pairing link may carry (`name=`, the computer's host name). Whoever made the link
 * or its QR code wrote it: cleaned as every name a person is shown (docs/protocol.md, "Names"), and none
 * when nothing visible is left.
 */
export function nameOfFragment(hash: string): string | undefined {
  const name = machineName(new URLSearchParams(hash.slice(1)).get('name') ?? '');
  return name || undefined;
}

/** A machine's name as the phone keeps and shows it: no hidden characters, trimmed, 60 characters at most; '' when nothing visible is left. */
export function machineName(text: string): string {
  const name = firstCodePoints(displayName(text).trim(), 60);
  return readsAs(name).trim() ? name : '';
}

/** A pairing link pasted into the page or read from a QR code: its pairing and name, or why it is none. */
export type LinkReading = { pairing: Pairing; name?: string } | { problem: string };

const NOT_A_LINK = 'This is not a pairing link. On the computer, remote-assistant pair prints one (in the editor: “Remote Assistant: Show Connection Info”).';

export function readPairingLink(text: string): LinkReading {
  let link: URL;
  try {
    link = new URL(text.trim());
  } catch {
    return { problem: NOT_A_LINK };
  }
  // A link without `url=` names the socket of the page it opens (the machine's own), not this page's.
  const pairing = /^https?:$/.test(link.protocol) ? parseFragment(link.hash, link) : undefined;
  return pairing ? { pairing, name: nameOfFragment(link.hash) } : { problem: NOT_A_LINK };
}

/**
 * Why this page cannot reach a pairing's machine, when it cannot: a page loaded over https (the relay's)
 * may not open an unencrypted `ws://` socket (mixed content), except to the phone itself.
 */
export function unreachableFrom(pairing: Pairing, page: Pick<Location, 'protocol'>): string | undefined {
  if (page.protocol !== 'https:' || !/^ws:/i.test(pairing.url)) return undefined;
  const host = new URL(pairing.url).hostname;
  if (host === 'localhost' || host === '[::1]' || /^127\./.test(host)) return undefined;
  return (
    `This page was opened over https, and a browser does not let such a page reach ${host} over the LAN's unencrypted address (ws://). ` +
    'Pair that computer through its relay link instead (“Remote Assistant: Show Connection Info” with a relay set up), or open its own link on the phone: that page then holds that computer alone.'
  );
}
