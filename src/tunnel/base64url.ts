/** Base64url without padding (docs/relay.md), in plain JS so the same code runs in Node, browsers and Workers. */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const VALUE = new Map([...ALPHABET].map((c, i) => [c, i]));

export function toBase64url(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] + ALPHABET[n & 63];
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i] << 16;
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63];
  } else if (rest === 2) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63];
  }
  return out;
}

/** Decodes base64url (padding tolerated); undefined for anything else, so callers turn it into their own error. */
export function fromBase64url(text: string): Uint8Array | undefined {
  // Only the padding's first = may start the match: from each = of a long run it scanned to the end (review24d: 200 KB of = took 17-39 s).
  const clean = text.replace(/(?<!=)=+$/, '');
  if (clean.length % 4 === 1) return undefined;
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let o = 0;
  for (const c of clean) {
    const v = VALUE.get(c);
    if (v === undefined) return undefined;
    value = (value << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (value >> bits) & 0xff;
    }
  }
  // Non-zero leftover bits mean a non-canonical encoding: refuse it, so one key has one spelling.
  if (bits > 0 && (value & ((1 << bits) - 1)) !== 0) return undefined;
  return out;
}

/** Decodes to exactly `length` bytes, else undefined. */
export function bytesOfLength(text: unknown, length: number): Uint8Array | undefined {
  if (typeof text !== 'string' || text.length > 4 * length) return undefined;
  const bytes = fromBase64url(text);
  return bytes && bytes.length === length ? bytes : undefined;
}
