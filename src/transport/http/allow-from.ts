import { isIP } from 'node:net';

/** `::ffff:10.0.0.1` (an IPv4 client on a dual-stack socket) is the IPv4 address 10.0.0.1. */
export function normalizeAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return (mapped ? mapped[1] : address).toLowerCase();
}

function expandIPv6(address: string): string[] | null {
  if (isIP(address) !== 6) return null;
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const headParts = head ? head.split(':') : [];
  const tailParts = tail ? tail.split(':') : [];
  const missing = 8 - headParts.length - tailParts.length;
  const parts = tail === undefined ? headParts : [...headParts, ...Array(missing).fill('0'), ...tailParts];
  return parts.map((p) => p.replace(/^0+(?=.)/, '').toLowerCase());
}

function matchesPattern(pattern: string, address: string): boolean {
  if (pattern === '*') return true;
  if (pattern === 'localhost') return address === '::1' || address.startsWith('127.');
  if (pattern.includes(':')) {
    if (!pattern.includes('*')) {
      const a = expandIPv6(address);
      const p = expandIPv6(pattern);
      return !!a && !!p && a.join(':') === p.join(':');
    }
    const regex = new RegExp(`^${pattern.toLowerCase().replace(/[.]/g, '\\.').replace(/\*/g, '[0-9a-f]*')}$`);
    return regex.test(address);
  }
  const want = pattern.split('.');
  const have = address.split('.');
  return have.length === 4 && want.every((segment, i) => segment === '*' || segment === have[i]);
}

/**
 * The key a client address is rate-limited by: an IPv4 address itself, an IPv6 address by its /64
 * (one host usually holds a whole /64, so counting per address would give it 2^64 allowances).
 */
export function loginLimitKey(remoteAddress: string): string {
  const address = normalizeAddress(remoteAddress);
  const parts = expandIPv6(address);
  return parts ? `${parts.slice(0, 4).join(':')}::/64` : address;
}

export type AddressFilter = (remoteAddress: string | undefined) => boolean;

/** `allow_from` (service-spec 5.6): only addresses matching a pattern may connect. */
export function compileAllowFrom(patterns: readonly string[]): AddressFilter {
  // Each open socket's address is re-checked before every event it is sent: the verdicts are kept (a
  // new config compiles a new filter), a bounded number so a flood of addresses cannot grow them.
  const verdicts = new Map<string, boolean>();
  return (remoteAddress) => {
    if (!remoteAddress) return false;
    let allowed = verdicts.get(remoteAddress);
    if (allowed === undefined) {
      const address = normalizeAddress(remoteAddress);
      allowed = patterns.some((pattern) => matchesPattern(pattern, address));
      if (verdicts.size >= MAX_KEPT_VERDICTS) verdicts.clear();
      verdicts.set(remoteAddress, allowed);
    }
    return allowed;
  };
}

const MAX_KEPT_VERDICTS = 1024;

function isLoopbackPattern(pattern: string): boolean {
  return pattern === 'localhost' || pattern === '::1' || /^127\.[\d*]+\.[\d*]+\.[\d*]+$/.test(pattern);
}

/** docs/protocol.md: bind 127.0.0.1 when every pattern is loopback, else every interface. */
export function bindHostFor(patterns: readonly string[]): string {
  return patterns.length > 0 && patterns.every(isLoopbackPattern) ? '127.0.0.1' : '::';
}
