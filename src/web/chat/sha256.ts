import { sha256 } from '@noble/hashes/sha2.js';

/**
 * SHA-256 of bytes, lowercase hex: crypto.subtle where the page has it (a secure context: https, the
 * editor, localhost), else @noble's (a phone on the LAN opens the page over http, where crypto.subtle does
 * not exist), which the tunnel already brings into the phone's page: a second SHA-256 of our own went (s33).
 * The service checks the hash of every upload with it.
 * `subtle` is for the tests (null: as on an http page).
 */
export async function sha256Hex(bytes: Uint8Array, subtle: SubtleCrypto | null = globalThis.crypto?.subtle ?? null): Promise<string> {
  const digest = subtle ? new Uint8Array(await subtle.digest('SHA-256', bytes as BufferSource)) : sha256(bytes);
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}
