/** The tunnel's X25519 (src/tunnel/x25519.ts, the Montgomery ladder alone): RFC 7748's vectors, and @noble's own x25519 agrees. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { x25519 as nobleX25519 } from '@noble/curves/ed25519.js';
import { x25519 } from '../../src/tunnel/x25519';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const bytes = (text: string) => Uint8Array.from(Buffer.from(text, 'hex'));

test("RFC 7748's X25519 vectors: section 5.2's two scalar multiplications and section 6.1's exchange", () => {
  assert.equal(
    hex(x25519.scalarMult(bytes('a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4'), bytes('e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c'))),
    'c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552',
  );
  assert.equal(
    hex(x25519.scalarMult(bytes('4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d'), bytes('e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493'))),
    '95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957',
  );
  const alice = bytes('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a');
  const bob = bytes('5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb');
  assert.equal(hex(x25519.getPublicKey(alice)), '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a');
  assert.equal(hex(x25519.getPublicKey(bob)), 'de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f');
  const shared = '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742';
  assert.equal(hex(x25519.getSharedSecret(alice, x25519.getPublicKey(bob))), shared);
  assert.equal(hex(x25519.getSharedSecret(bob, x25519.getPublicKey(alice))), shared);
});

test("@noble's x25519 (ed25519.js, built on the Edwards curve too) makes the same keys and secrets", () => {
  for (let i = 0; i < 20; i++) {
    const a = x25519.keygen();
    const b = nobleX25519.keygen();
    assert.equal(hex(a.publicKey), hex(nobleX25519.getPublicKey(a.secretKey)));
    assert.equal(hex(x25519.getSharedSecret(a.secretKey, b.publicKey)), hex(nobleX25519.getSharedSecret(b.secretKey, a.publicKey)));
  }
  // A low-order point is refused, as @noble's own refuses it.
  assert.throws(() => x25519.getSharedSecret(x25519.keygen().secretKey, new Uint8Array(32)));
});
