import { bytesOfLength, toBase64url } from './base64url';
import { noble } from './noble';

export const KEY_BYTES = 32;

/** An X25519 key pair, both halves base64url (32 bytes each). `secretKey` never leaves its owner. */
export interface KeyPairText {
  publicKey: string;
  secretKey: string;
}

export function generateKeyPair(): KeyPairText {
  const { secretKey, publicKey } = noble().x25519.keygen();
  return { publicKey: toBase64url(publicKey), secretKey: toBase64url(secretKey) };
}

/** A stored key pair, checked: the public half must be the secret half's. Undefined when it is not a valid pair. */
export function parseKeyPair(value: unknown): KeyPairText | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { publicKey, secretKey } = value as Partial<KeyPairText>;
  const secret = bytesOfLength(secretKey, KEY_BYTES);
  if (!secret || typeof publicKey !== 'string') return undefined;
  return toBase64url(noble().x25519.getPublicKey(secret)) === publicKey ? { publicKey, secretKey: secretKey as string } : undefined;
}

/** A public key in its one canonical spelling (base64url, no padding), or undefined if it is not 32 bytes of base64url/base64. */
export function canonicalPublicKey(text: unknown): string | undefined {
  if (typeof text !== 'string') return undefined;
  const bytes = bytesOfLength(text.replace(/\+/g, '-').replace(/\//g, '_'), KEY_BYTES);
  return bytes ? canonicalKeyText(bytes) : undefined;
}

/**
 * The canonical text of a 32-byte public key: bit 255 cleared. X25519 ignores that bit (RFC 7748), so
 * the key with it set is a twin that agrees the same secrets; spelled apart, a twin would be another key
 * to admission, marks and registration names.
 */
export function canonicalKeyText(bytes: Uint8Array): string {
  const canonical = Uint8Array.from(bytes);
  canonical[KEY_BYTES - 1] &= 0x7f;
  return toBase64url(canonical);
}
