/**
 * X25519 (RFC 7748) on @noble's Montgomery ladder alone. '@noble/curves/ed25519.js' builds its x25519 on
 * the Edwards curve as well (a table for a faster keygen), which brought the whole of ed25519 into the
 * phone's page for the one key pair a handshake makes.
 */
import { pow } from '@noble/curves/abstract/modular.js';
import { montgomery } from '@noble/curves/abstract/montgomery.js';

const P = 2n ** 255n - 19n;

export const x25519 = montgomery({
  P,
  type: 'x25519',
  // x^(p-2), the field's inverse.
  powPminus2: (x: bigint) => pow(x, P - 2n, P),
  // RFC 7748 section 5's clamping of a scalar, in place.
  adjustScalarBytes: (bytes: Uint8Array) => {
    bytes[0] &= 248;
    bytes[31] &= 127;
    bytes[31] |= 64;
    return bytes;
  },
});
