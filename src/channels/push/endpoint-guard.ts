import { createECDH } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { dns } from '../../platform/builtins';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { ServiceError, type PushSubscriptionInput } from '../../protocol';

/**
 * Addresses a push service never has: loopback, private, link-local (the cloud metadata service),
 * shared (CGNAT), multicast, reserved, and IPv6's equivalents and IPv4-mapped addresses. A client must
 * not be able to make the service POST to them (an internal service behind the machine's firewall).
 */
const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv4');
// ::/96 holds :: and ::1 and the IPv4-compatible forms (::127.0.0.1); 2002::/16 (6to4) and the NAT64
// prefixes (64:ff9b::/96, local-use 64:ff9b:1::/48) embed an IPv4 address; fec0::/10 is site-local.
for (const [net, prefix] of [
  ['::', 96],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv6');
}

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return NOT_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Names that never lead to a public push service: localhost and its sub-domains, mDNS `.local`, single labels (intranet names). */
function isLocalName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || name.endsWith('.local') || !name.includes('.');
}

/** A host name as DNS has it (after WHATWG's lowercasing and punycode), optionally ending with the root dot. */
const DNS_NAME = /^(?!-)[a-z0-9_-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9_-]{1,63}(?<!-))*\.?$/;

const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;

function decodeKey(value: string, what: string): Buffer {
  if (!BASE64URL.test(value)) throw new ServiceError('invalid_request', `invalid push_subscribe: subscription.keys.${what} must be base64url`);
  return Buffer.from(value, 'base64url');
}

export interface EndpointPolicy {
  /** Tests only (a fake push service on 127.0.0.1): never set from service.json. */
  allowPrivateEndpoints?: boolean;
}

/**
 * Checks a browser's subscription before it is stored: an `https:` endpoint on a public host (an IP
 * literal or a name that cannot be a push service refused; names resolving to private addresses are
 * refused at send time, by `guardedAgent`), no credentials in the URL, and keys as RFC 8291 needs
 * them: `p256dh` a point on P-256 (65 bytes uncompressed), `auth` 16 bytes. Throws invalid_request
 * naming what is wrong; returns the endpoint as parsed: store and send its `href`, never the text as
 * given (`127.0.0.1%2epush.example.com` is a name to WHATWG, an IP literal to the legacy url.parse).
 */
export function checkSubscription(subscription: PushSubscriptionInput, policy: EndpointPolicy): URL {
  const bad = (why: string) => new ServiceError('invalid_request', `invalid push_subscribe: subscription.${why}`);
  let url: URL;
  try {
    url = new URL(subscription.endpoint);
  } catch {
    throw bad('endpoint is not a URL');
  }
  if (url.protocol !== 'https:') throw bad('endpoint must be an https: URL');
  if (url.username || url.password) throw bad('endpoint must not hold credentials');
  if (!url.hostname) throw bad('endpoint has no host');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // The push library reads the endpoint again with the legacy url.parse, which ends a host at `;`, `{`,
  // a quote...: `127.0.0.1;.push.example.com` would be checked as a name and sent to the IP literal.
  if (!isIP(host) && !DNS_NAME.test(host)) throw bad('endpoint host must be a DNS name (letters, digits, - and _ between dots)');
  if (!policy.allowPrivateEndpoints) {
    if (isIP(host) ? isPrivateAddress(host) : isLocalName(host)) {
      throw bad('endpoint must be a public push service, not a loopback, private or link-local address or a local name');
    }
  }
  const p256dh = decodeKey(subscription.keys.p256dh, 'p256dh');
  if (p256dh.length !== 65 || p256dh[0] !== 4) throw bad('keys.p256dh must be an uncompressed P-256 public key (65 bytes)');
  try {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    ecdh.computeSecret(p256dh);
  } catch {
    throw bad('keys.p256dh is not a point on P-256');
  }
  if (decodeKey(subscription.keys.auth, 'auth').length !== 16) throw bad('keys.auth must be 16 bytes');
  return url;
}

/**
 * Resolves like the system does, but fails for a name that resolves to a private address (a push
 * endpoint whose DNS points inside the network, or is made to later: the check is made at each connection).
 */
const guardedLookup = ((hostname: string, options: object, callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
  dns().lookup(hostname, options, (error, address: string | LookupAddress[], family?: number) => {
    if (error) return callback(error, address, family);
    const addresses = Array.isArray(address) ? address.map((a) => a.address) : [address];
    if (addresses.some(isPrivateAddress)) {
      const refused: NodeJS.ErrnoException = new Error('the push endpoint resolves to a private address');
      refused.code = 'EPRIVATEADDRESS';
      return callback(refused, address, family);
    }
    callback(null, address, family);
  });
}) as unknown as LookupFunction;

/** The HTTPS agent of production pushes: keeps connections to the push services, refuses private addresses. */
export function guardedAgent(): https.Agent {
  return new https.Agent({ keepAlive: true, lookup: guardedLookup });
}
