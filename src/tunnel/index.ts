/**
 * The end-to-end tunnel between a client and the service through the relay (docs/relay.md): one
 * implementation for the service (Node) and the phone page (browser).
 */
export { toBase64url, fromBase64url, bytesOfLength } from './base64url';
export { E2EError, type E2EFailure } from './errors';
export { generateKeyPair, parseKeyPair, canonicalPublicKey, KEY_BYTES, type KeyPairText } from './keys';
export { SecureChannel, counterNonce } from './secure-channel';
export { ClientHandshake, acceptHello, parseHello, pairProof, proofMatches, E2E_VERSION, type Hello } from './handshake';
