// What the tunnel uses of @noble, required at its first use (noble.ts).
export { x25519 } from './x25519';
export { hkdf } from '@noble/hashes/hkdf.js';
export { hmac } from '@noble/hashes/hmac.js';
export { sha256 } from '@noble/hashes/sha2.js';
export { concatBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
export { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
