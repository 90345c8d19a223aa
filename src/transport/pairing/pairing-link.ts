/** The relay addresses a phone needs (docs/relay.md §Pairing). */

/** The relay's client socket for this machine: the channel's URL (path `/ws` when it has none) with `machine_id`. */
export function relaySocketUrl(channelUrl: string, machineId: string, role?: 'machine'): string {
  const url = new URL(channelUrl);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/ws';
  url.searchParams.set('machine_id', machineId);
  if (role) url.searchParams.set('role', role);
  return url.toString();
}

/** The relay's HTTP base for a channel URL: wss -> https, ws -> http, no path. */
export function relayHttpOrigin(channelUrl: string): string {
  const url = new URL(channelUrl);
  return `${url.protocol === 'wss:' ? 'https:' : 'http:'}//${url.host}`;
}

/**
 * The phone page's URL on the relay, everything in the fragment (never sent to a server). It holds the
 * one-time pairing secret, never a token: the phone spends the secret for its own device credential.
 * `name` (the computer's host name) names the machine in the phone's list of machines.
 */
export function relayPairingUrl(options: { channelUrl: string; relayUrl: string; machineKey: string; secret: string; name: string }): string {
  const fragment = new URLSearchParams({ relay: options.relayUrl, machine_key: options.machineKey, pair: options.secret, name: options.name });
  return `${relayHttpOrigin(options.channelUrl)}/#${fragment.toString()}`;
}
