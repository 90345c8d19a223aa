import { x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { bytesOfLength, toBase64url } from './base64url';
import { E2EError } from './errors';
import { KEY_BYTES, type KeyPairText } from './keys';
import { SecureChannel } from './secure-channel';

/** The tunnel's handshake (docs/relay.md §End-to-end encryption): hello, welcome, HKDF-SHA256 keys. */
export const E2E_VERSION = 1;
export const HANDSHAKE_NONCE_BYTES = 16;
const HKDF_INFO = utf8ToBytes('remote-assistant e2e v1');
const PROOF_BYTES = 32;

export interface Hello {
  /** The client's public key, canonical base64url. */
  clientKey: string;
  clientKeyBytes: Uint8Array;
  nonce: Uint8Array;
  /** HMAC-SHA256 proof of a pairing secret, when the client is pairing. */
  pair?: Uint8Array;
}

function parseObject(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new E2EError('malformed', `expected the ${what} frame, got text that is not JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new E2EError('malformed', `expected the ${what} frame`);
  return value as Record<string, unknown>;
}

/** The pairing proof: HMAC-SHA256 keyed with the pairing secret (its UTF-8 text, as in the URL) over the client key's 32 bytes. */
export function pairProof(pairingSecret: string, clientKey: Uint8Array): Uint8Array {
  return hmac(sha256, utf8ToBytes(pairingSecret), clientKey);
}

/** Constant-time comparison of a proof against a pairing secret. */
export function proofMatches(pairingSecret: string, clientKey: Uint8Array, proof: Uint8Array): boolean {
  const expected = pairProof(pairingSecret, clientKey);
  if (expected.length !== proof.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) diff |= expected[i] ^ proof[i];
  return diff === 0;
}

/** The machine's reading of a client's first frame. Throws E2EError when it is not a valid hello. */
export function parseHello(text: string): Hello {
  const frame = parseObject(text, 'e2e hello');
  if (frame.e2e !== 'hello') throw new E2EError('malformed', 'the first frame must be the e2e hello {"e2e":"hello",...}');
  if (frame.v !== E2E_VERSION) throw new E2EError('version', `unsupported e2e version (this service speaks v${E2E_VERSION})`);
  const clientKeyBytes = bytesOfLength(frame.client_key, KEY_BYTES);
  if (!clientKeyBytes) throw new E2EError('malformed', 'client_key must be 32 bytes of base64url');
  const nonce = bytesOfLength(frame.nonce, HANDSHAKE_NONCE_BYTES);
  if (!nonce) throw new E2EError('malformed', 'nonce must be 16 bytes of base64url');
  let pair: Uint8Array | undefined;
  if (frame.pair !== undefined) {
    pair = bytesOfLength(frame.pair, PROOF_BYTES);
    if (!pair) throw new E2EError('malformed', 'pair must be 32 bytes of base64url');
  }
  return { clientKey: toBase64url(clientKeyBytes), clientKeyBytes, nonce, ...(pair ? { pair } : {}) };
}

/** Both directions' keys: 64 bytes of HKDF-SHA256, client-to-machine first. */
function deriveKeys(secretKey: Uint8Array, peerKey: Uint8Array, clientNonce: Uint8Array, machineNonce: Uint8Array) {
  let shared: Uint8Array;
  try {
    shared = x25519.getSharedSecret(secretKey, peerKey);
  } catch {
    // A low-order public key gives an all-zero secret; noble refuses it.
    throw new E2EError('key', 'the peer key is not a usable X25519 public key');
  }
  const okm = hkdf(sha256, shared, concatBytes(clientNonce, machineNonce), HKDF_INFO, 64);
  return { clientToMachine: okm.slice(0, 32), machineToClient: okm.slice(32, 64) };
}

/** The machine accepts a hello (after deciding the key may connect): the welcome frame to send and the channel. */
export function acceptHello(machine: KeyPairText, hello: Hello): { welcome: string; channel: SecureChannel } {
  const machineNonce = randomBytes(HANDSHAKE_NONCE_BYTES);
  const secretKey = bytesOfLength(machine.secretKey, KEY_BYTES);
  if (!secretKey) throw new E2EError('key', 'the machine key pair is invalid');
  const keys = deriveKeys(secretKey, hello.clientKeyBytes, hello.nonce, machineNonce);
  return {
    welcome: JSON.stringify({ e2e: 'welcome', v: E2E_VERSION, nonce: toBase64url(machineNonce) }),
    channel: new SecureChannel(keys.machineToClient, keys.clientToMachine),
  };
}

/** The client's side: send `hello()`, then `complete()` with the machine's answer. */
export class ClientHandshake {
  private readonly nonce = randomBytes(HANDSHAKE_NONCE_BYTES);
  private readonly secretKey: Uint8Array;
  private readonly publicKey: Uint8Array;
  private readonly machineKey: Uint8Array;

  constructor(
    client: KeyPairText,
    machineKey: string,
    private readonly pairingSecret?: string,
  ) {
    const secretKey = bytesOfLength(client.secretKey, KEY_BYTES);
    const publicKey = bytesOfLength(client.publicKey, KEY_BYTES);
    const machine = bytesOfLength(machineKey, KEY_BYTES);
    if (!secretKey || !publicKey) throw new E2EError('key', 'the client key pair is invalid');
    if (!machine) throw new E2EError('key', 'machine_key must be 32 bytes of base64url');
    this.secretKey = secretKey;
    this.publicKey = publicKey;
    this.machineKey = machine;
  }

  hello(): string {
    const frame: Record<string, unknown> = { e2e: 'hello', v: E2E_VERSION, client_key: toBase64url(this.publicKey), nonce: toBase64url(this.nonce) };
    if (this.pairingSecret) frame.pair = toBase64url(pairProof(this.pairingSecret, this.publicKey));
    return JSON.stringify(frame);
  }

  /** Reads the welcome; throws E2EError when the frame is anything else. */
  complete(welcome: string): SecureChannel {
    const frame = parseObject(welcome, 'e2e welcome');
    if (frame.e2e !== 'welcome') throw new E2EError('malformed', 'expected the e2e welcome');
    if (frame.v !== E2E_VERSION) throw new E2EError('version', `unsupported e2e version (this client speaks v${E2E_VERSION})`);
    const machineNonce = bytesOfLength(frame.nonce, HANDSHAKE_NONCE_BYTES);
    if (!machineNonce) throw new E2EError('malformed', 'the welcome nonce must be 16 bytes of base64url');
    const keys = deriveKeys(this.secretKey, this.machineKey, this.nonce, machineNonce);
    return new SecureChannel(keys.clientToMachine, keys.machineToClient);
  }
}
