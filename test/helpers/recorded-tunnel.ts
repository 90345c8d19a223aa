/**
 * The attacker of the forward-secrecy tests: a relay operator who kept every frame of a session and
 * later got both long-term X25519 secret keys (the phone's from its localStorage, the machine's from its
 * store). It computes every Diffie-Hellman value those keys and the recorded public values allow, and
 * tries each (alone, and all together) as the tunnel's HKDF input, with the recorded nonces, on every
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

/** What the recording gives away: how many boxes it holds, and the plaintexts of those that opened (each once). */
export function readRecordedSession(recorded: readonly string[], phone: KeyPairText, machine: KeyPairText): { boxes: number; opened: string[] } {
  const frames = recorded.flatMap((text): Frame[] => {
    try {
      const value = JSON.parse(text) as unknown;
      return value && typeof value === 'object' && 'e2e' in value ? [value as Frame] : [];
    } catch {
      return [];
    }
  });
  const hello = frames.find((f) => f.e2e === 'hello');
  const welcome = frames.find((f) => f.e2e === 'welcome');
  const boxes = frames.filter((f) => f.e2e === 'box').map((f) => bytes(f.c)!);
  if (!hello || !welcome) return { boxes: boxes.length, opened: [] };
  const phoneSecret = fromBase64url(phone.secretKey)!;
  const machineSecret = fromBase64url(machine.secretKey)!;
  const computable = [dh(phoneSecret, fromBase64url(machine.publicKey)), dh(machineSecret, bytes(hello.eph)), dh(phoneSecret, bytes(welcome.eph))].filter((v): v is Uint8Array => v !== undefined);
  const inputs = [...computable, concatBytes(...computable)];
  const salt = concatBytes(bytes(hello.nonce) ?? new Uint8Array(), bytes(welcome.nonce) ?? new Uint8Array());
  const opened = new Set<string>();
  for (const ikm of inputs) {
    for (const info of ['remote-assistant e2e v1', 'remote-assistant e2e v2']) {
      const okm = hkdf(sha256, ikm, salt, utf8ToBytes(info), 64);
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
  }
  return { boxes: boxes.length, opened: [...opened] };
}
