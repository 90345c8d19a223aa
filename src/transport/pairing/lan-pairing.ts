import { hostname, networkInterfaces } from 'node:os';

/** The machine's IPv4 addresses a phone on the LAN can reach (no loopback, no link-local). */
export function lanAddresses(): string[] {
  const out: string[] = [];
  for (const entries of Object.values(networkInterfaces())) {
    for (const e of entries ?? []) if (e.family === 'IPv4' && !e.internal && !e.address.startsWith('169.254.')) out.push(e.address);
  }
  return out;
}

/**
 * The host a pairing link names for a service bound to `bindHost`: loopback when it listens only there
 * (a phone on the LAN could not reach it anyway), else the first LAN address.
 */
export function pairingHostFor(bindHost: string): string {
  if (bindHost === '127.0.0.1' || bindHost === '::1' || bindHost === 'localhost') return '127.0.0.1';
  if (bindHost !== '::' && bindHost !== '0.0.0.0') return bindHost;
  return lanAddresses()[0] ?? '127.0.0.1';
}

/**
 * The phone's pairing link on the LAN: the page served by the service, the socket and a one-time pairing
 * secret in the fragment (never sent to a server), and the computer's name for the phone's list of
 * machines. Never the access token: the phone spends the secret for its own device credential
 * (docs/protocol.md, "Devices").
 */
export function lanPairingUrl(host: string, port: number, pairingSecret: string): string {
  const origin = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  return `http://${origin}/#url=${encodeURIComponent(`ws://${origin}/ws`)}&pair=${encodeURIComponent(pairingSecret)}&name=${encodeURIComponent(hostname())}`;
}
