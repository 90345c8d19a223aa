/**
 * The attacker of the forward-secrecy tests: a relay operator who kept every frame of a session and
 * later got both long-term X25519 secret keys (the phone's from its localStorage, the machine's from its
 * store). It computes every Diffie-Hellman value those keys and the recorded public values allow, and
 * tries every combination of them as the tunnel's HKDF input (with the transcript hash it can compute too), with the recorded nonces, on every
 * recorded box. Written with @noble directly, not with src/tunnel, so a change there cannot blind it.
 */
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { counterNonce, fromBase64url, type KeyPairText } from '../../src/tunnel';

interface Frame {
  e2e?: unknown;
  nonce?: unknown;
  eph?: unknown;
  c?: unknown;
}

const bytes = (text: unknown) => (typeof text === 'string' ? fromBase64url(text) : undefined);

function dh(secret: Uint8Array, peer: Uint8Array | undefined): Uint8Array | undefined {
  if (!peer) return undefined;
  try {
    return x25519.getSharedSecret(secret, peer);
  } catch {
    return undefined;
  }
}

/**
 * Every 64 bytes of keys an attacker can make of the Diffie-Hellman values it could compute (undefined:
 * one it could not): each non-empty subset of them in the order given, as HKDF input, with the v1 and v2
 * info, and the v2 info followed by the transcript hash of the hello and welcome texts it saw.
 */
export function candidateKeys(values: readonly (Uint8Array | undefined)[], salt: Uint8Array, hello?: string, welcome?: string): Uint8Array[] {
  const known = values.filter((v): v is Uint8Array => v !== undefined);
  const infos = [utf8ToBytes('remote-assistant e2e v1'), utf8ToBytes('remote-assistant e2e v2')];
  if (hello !== undefined && welcome !== undefined) {
    const transcript = sha256(concatBytes(sha256(utf8ToBytes(hello)), sha256(utf8ToBytes(welcome))));
    infos.push(concatBytes(utf8ToBytes('remote-assistant e2e v2'), transcript));
  }
  const keys: Uint8Array[] = [];
  for (let mask = 1; mask < 1 << known.length; mask++) {
    const ikm = concatBytes(...known.filter((_, i) => mask & (1 << i)));
    for (const info of infos) keys.push(hkdf(sha256, ikm, salt, info, 64));
  }
  return keys;
}

/** What the recording gives away: how many boxes it holds, and the plaintexts of those that opened (each once). */
export function readRecordedSession(recorded: readonly string[], phone: KeyPairText, machine: KeyPairText): { boxes: number; opened: string[] } {
  const frames = recorded.flatMap((text): { text: string; frame: Frame }[] => {
    try {
      const value = JSON.parse(text) as unknown;
      return value && typeof value === 'object' && 'e2e' in value ? [{ text, frame: value as Frame }] : [];
    } catch {
      return [];
    }
  });
  const helloText = frames.find((f) => f.frame.e2e === 'hello')?.text;
  const welcomeText = frames.find((f) => f.frame.e2e === 'welcome')?.text;
  const boxes = frames.filter((f) => f.frame.e2e === 'box').map((f) => bytes(f.frame.c)!);
  if (!helloText || !welcomeText) return { boxes: boxes.length, opened: [] };
  const hello = JSON.parse(helloText) as Frame;
  const welcome = JSON.parse(welcomeText) as Frame;
  const phoneSecret = fromBase64url(phone.secretKey)!;
  const machineSecret = fromBase64url(machine.secretKey)!;
  const computable = [dh(phoneSecret, fromBase64url(machine.publicKey)), dh(machineSecret, bytes(hello.eph)), dh(phoneSecret, bytes(welcome.eph))];
  const salt = concatBytes(bytes(hello.nonce) ?? new Uint8Array(), bytes(welcome.nonce) ?? new Uint8Array());
  const opened = new Set<string>();
  for (const okm of candidateKeys(computable, salt, helloText, welcomeText)) {
    // Both directions' keys, each with its own frame count (the recording mixes the directions).
    const keys = [okm.slice(0, 32), okm.slice(32, 64)];
    const counts = [0, 0];
    for (const box of boxes) {
      for (const side of [0, 1]) {
        try {
          const plain = xchacha20poly1305(keys[side], counterNonce(counts[side])).decrypt(box);
          counts[side] += 1;
          opened.add(new TextDecoder().decode(plain));
          break;
        } catch {
          // Not this direction's next frame, or not these keys.
        }
      }
    }
  }
  return { boxes: boxes.length, opened: [...opened] };
}
