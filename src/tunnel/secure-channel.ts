import { fromBase64url, toBase64url } from './base64url';
import { E2EError } from './errors';
import { noble } from './noble';

const NONCE_BYTES = 24;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The nonce of the n-th frame of one direction: 16 zero bytes, then n as 8 bytes big-endian (docs/relay.md). */
export function counterNonce(count: number): Uint8Array {
  const nonce = new Uint8Array(NONCE_BYTES);
  const view = new DataView(nonce.buffer);
  view.setUint32(16, Math.floor(count / 2 ** 32));
  view.setUint32(20, count >>> 0);
  return nonce;
}

/**
 * The tunnel after the handshake: XChaCha20-Poly1305 boxes with an implicit counter nonce per
 * direction. Each side counts what it sent and what it received, so a frame that was tampered with,
 * replayed, reordered or dropped fails to open; after the first failure the channel refuses everything
 * (the session must start over with a new handshake, which means new keys).
 */
export class SecureChannel {
  private sent = 0;
  private received = 0;
  private broken = false;

  constructor(
    private readonly sendKey: Uint8Array,
    private readonly receiveKey: Uint8Array,
  ) {}

  /** Encrypts one service frame's text into a `{"e2e":"box","c":...}` frame. */
  seal(text: string): string {
    if (this.broken) throw new E2EError('closed', 'the tunnel is closed after a failed frame');
    const box = noble().xchacha20poly1305(this.sendKey, counterNonce(this.sent)).encrypt(encoder.encode(text));
    this.sent += 1;
    return JSON.stringify({ e2e: 'box', c: toBase64url(box) });
  }

  /** Decrypts the next box frame of the other side; throws E2EError (and breaks the channel) on anything else. */
  open(frame: string): string {
    if (this.broken) throw new E2EError('closed', 'the tunnel is closed after a failed frame');
    try {
      const box = boxBytesOf(frame);
      const plain = noble().xchacha20poly1305(this.receiveKey, counterNonce(this.received)).decrypt(box);
      this.received += 1;
      return decoder.decode(plain);
    } catch (error) {
      this.broken = true;
      if (error instanceof E2EError) throw error;
      throw new E2EError('decrypt', 'a frame failed to decrypt (tampered, replayed, reordered or dropped)');
    }
  }

  get isBroken(): boolean {
    return this.broken;
  }
}

function boxBytesOf(frame: string): Uint8Array {
  let parsed: unknown;
  try {
    parsed = JSON.parse(frame);
  } catch {
    throw new E2EError('malformed', 'expected an encrypted frame, got text that is not JSON');
  }
  const { e2e, c } = (parsed ?? {}) as { e2e?: unknown; c?: unknown };
  if (e2e !== 'box' || typeof c !== 'string') throw new E2EError('malformed', 'expected an encrypted frame {"e2e":"box","c":...}');
  const bytes = fromBase64url(c);
  if (!bytes) throw new E2EError('malformed', 'the encrypted frame is not base64url');
  return bytes;
}
