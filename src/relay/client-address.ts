/**
 * The address a client's per-address limits count against. IPv6 clients are grouped by their /64
 * (one subscriber gets a whole /64, so counting single addresses would let one flood from 2^64 of
 * them); IPv4-mapped IPv6 is plain IPv4.
 */
export function addressKey(raw: string | null | undefined): string {
  const address = (raw ?? '').trim();
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!address.includes(':')) return address;
  const groups = expandIPv6(address.split('%')[0]);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : address;
}

/** The eight 16-bit groups of an IPv6 address, or undefined when it is not one. */
function expandIPv6(address: string): string[] | undefined {
  const halves = address.toLowerCase().split('::');
  if (halves.length > 2) return undefined;
  const part = (text: string) => (text ? text.split(':') : []);
  const head = part(halves[0]);
  const tail = halves.length === 2 ? part(halves[1]) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (!groups.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return undefined;
  return groups.map((group) => group.replace(/^0+(?=.)/, ''));
}

/**
 * The client's address behind a proxy the operator trusts: the last X-Forwarded-For entry (the one
 * that proxy added; earlier ones come from the client and prove nothing).
 */
export function lastForwardedFor(header: string | string[] | null | undefined): string | undefined {
  const joined = Array.isArray(header) ? header.join(',') : (header ?? '');
  const last = joined
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .at(-1);
  return last || undefined;
}
