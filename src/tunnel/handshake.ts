import { bytesOfLength, toBase64url } from './base64url';
import { E2EError } from './errors';
import { KEY_BYTES, canonicalKeyText, type KeyPairText } from './keys';
import { noble } from './noble';
import { SecureChannel } from './secure-channel';

/**
 * The tunnel's handshake (docs/relay.md §End-to-end encryption): hello, welcome, HKDF-SHA256 keys.
 * v2 adds an ephemeral X25519 key on each side, so a session's keys cannot be made again from the two
 * long-term keys: a relay that kept the frames learns nothing when a phone's or the machine's key leaks
 * later (forward secrecy). Clients speak v2 only; the machine still answers v1 hellos of older pages.
 */
export const E2E_VERSION = 2;
/** Hello versions the machine accepts (v1: the long-term keys alone, no forward secrecy). */
const ACCEPTED_VERSIONS: ReadonlySet<unknown> = new Set([1, 2]);
export const HANDSHAKE_NONCE_BYTES = 16;
const hkdfInfo = (version: 1 | 2): Uint8Array => new TextEncoder().encode(`remote-assistant e2e v${version}`);
const PROOF_BYTES = 32;

export interface Hello {
  /** 2, or 1 from an older page (no ephemeral key: no forward secrecy). */
  version: 1 | 2;
  /** The client's public key, canonical (base64url, bit 255 cleared: canonicalKeyText). */
  clientKey: string;
  clientKeyBytes: Uint8Array;
  nonce: Uint8Array;
  /** v2: the client's ephemeral public key, made for this handshake alone. */
  ephemeral?: Uint8Array;
  /** HMAC-SHA256 proof of a pairing secret, when the client is pairing. */
  pair?: Uint8Array;
  /** The frame's exact text: v2 binds it into the keys (transcriptHash). */
  text: string;
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
  const { hmac, sha256, utf8ToBytes } = noble();
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
  if (!ACCEPTED_VERSIONS.has(frame.v)) throw new E2EError('version', `unsupported e2e version (this service speaks v1 and v${E2E_VERSION})`);
  const version = frame.v as 1 | 2;
  const clientKeyBytes = bytesOfLength(frame.client_key, KEY_BYTES);
  if (!clientKeyBytes) throw new E2EError('malformed', 'client_key must be 32 bytes of base64url');
  const nonce = bytesOfLength(frame.nonce, HANDSHAKE_NONCE_BYTES);
  if (!nonce) throw new E2EError('malformed', 'nonce must be 16 bytes of base64url');
  const ephemeral = version === 2 ? bytesOfLength(frame.eph, KEY_BYTES) : undefined;
  if (version === 2 && !ephemeral) throw new E2EError('malformed', 'eph must be 32 bytes of base64url');
  let pair: Uint8Array | undefined;
  if (frame.pair !== undefined) {
    pair = bytesOfLength(frame.pair, PROOF_BYTES);
    if (!pair) throw new E2EError('malformed', 'pair must be 32 bytes of base64url');
  }
  return { version, clientKey: canonicalKeyText(clientKeyBytes), clientKeyBytes, nonce, ...(ephemeral ? { ephemeral } : {}), ...(pair ? { pair } : {}), text };
}

/** X25519; a low-order public key gives an all-zero secret, which noble refuses. */
function agree(secretKey: Uint8Array, peerKey: Uint8Array): Uint8Array {
  try {
    return noble().x25519.getSharedSecret(secretKey, peerKey);
  } catch {
    throw new E2EError('key', 'the peer key is not a usable X25519 public key');
  }
}

/**
 * What binds the exchanged frames into v2's keys (Noise's handshake hash): SHA-256 of the SHA-256 of the
 * hello's exact text and of the welcome's. A relay that alters anything in either (a bit X25519 ignores
 * in an `eph`, a `pair`, a field it adds) gives the two sides different keys: the first box fails.
 */
function transcriptHash(hello: string, welcome: string): Uint8Array {
  const { concatBytes, sha256, utf8ToBytes } = noble();
  return sha256(concatBytes(sha256(utf8ToBytes(hello)), sha256(utf8ToBytes(welcome))));
}

/**
 * Both directions' keys: 64 bytes of HKDF-SHA256, client-to-machine first. `shared` are the
 * Diffie-Hellman values in the protocol's order (v1: the long-term keys' alone; v2: docs/relay.md);
 * v2's info ends with the transcript hash. Every secret input and the HKDF output are wiped here.
 */
function deriveKeys(version: 1 | 2, shared: Uint8Array[], clientNonce: Uint8Array, machineNonce: Uint8Array, transcript?: Uint8Array) {
  const { concatBytes, hkdf, sha256 } = noble();
  const ikm = concatBytes(...shared);
  for (const value of shared) value.fill(0);
  const info = version === 2 ? concatBytes(hkdfInfo(2), transcript!) : hkdfInfo(1);
  const okm = hkdf(sha256, ikm, concatBytes(clientNonce, machineNonce), info, 64);
  ikm.fill(0);
  const keys = { clientToMachine: okm.slice(0, 32), machineToClient: okm.slice(32, 64) };
  okm.fill(0);
  return keys;
}

/**
 * The machine accepts a hello (after deciding the key may connect): the welcome frame to send and the
 * channel. v2: with a fresh ephemeral key, forgotten once the keys are made; v1 (older pages): the
 * long-term keys alone.
 */
export function acceptHello(machine: KeyPairText, hello: Hello): { welcome: string; channel: SecureChannel } {
  const secretKey = bytesOfLength(machine.secretKey, KEY_BYTES);
  if (!secretKey) throw new E2EError('key', 'the machine key pair is invalid');
  const machineNonce = noble().randomBytes(HANDSHAKE_NONCE_BYTES);
  const ephemeral = hello.version === 2 ? noble().x25519.keygen() : undefined;
  try {
    const frame: Record<string, unknown> = { e2e: 'welcome', v: hello.version, nonce: toBase64url(machineNonce) };
    if (ephemeral) frame.eph = toBase64url(ephemeral.publicKey);
    const welcome = JSON.stringify(frame);
    const shared = [agree(secretKey, hello.clientKeyBytes)];
    // v2: ss, ee, es (client ephemeral, machine long-term), se (client long-term, machine ephemeral).
    if (ephemeral) shared.push(agree(ephemeral.secretKey, hello.ephemeral!), agree(secretKey, hello.ephemeral!), agree(ephemeral.secretKey, hello.clientKeyBytes));
    const keys = deriveKeys(hello.version, shared, hello.nonce, machineNonce, ephemeral ? transcriptHash(hello.text, welcome) : undefined);
    return { welcome, channel: new SecureChannel(keys.machineToClient, keys.clientToMachine) };
  } finally {
    ephemeral?.secretKey.fill(0);
    secretKey.fill(0);
  }
}

/** The client's side: send `hello()`, then `complete()` with the machine's answer (once). */
export class ClientHandshake {
  private readonly nonce = noble().randomBytes(HANDSHAKE_NONCE_BYTES);
  /** This handshake's own key pair (v2); its secret half is wiped once `complete` returns or throws. */
  private readonly ephemeral: { secretKey: Uint8Array; publicKey: Uint8Array };
  private readonly secretKey: Uint8Array;
  private readonly publicKey: Uint8Array;
  private readonly machineKey: Uint8Array;
  /** The hello as sent: half of the transcript hash. */
  private helloText?: string;
  private done = false;

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
    // Made after the checks, so a refused key pair leaves no ephemeral secret behind.
    this.ephemeral = noble().x25519.keygen();
  }

  hello(): string {
    const frame: Record<string, unknown> = {
      e2e: 'hello',
      v: E2E_VERSION,
      client_key: toBase64url(this.publicKey),
      nonce: toBase64url(this.nonce),
      eph: toBase64url(this.ephemeral.publicKey),
    };
    if (this.pairingSecret) frame.pair = toBase64url(pairProof(this.pairingSecret, this.publicKey));
    this.helloText = JSON.stringify(frame);
    return this.helloText;
  }

  /**
   * Reads the welcome; throws E2EError when the frame is anything else. Only a v2 welcome (with the
   * machine's ephemeral key) is taken: a relay that made the hello look like v1 to the machine gets no
   * session without forward secrecy out of this client, only a refused one. The ephemeral secret is
   * wiped whatever the outcome: a handshake completes once.
   */
  complete(welcome: string): SecureChannel {
    const mine = this.ephemeral.secretKey;
    try {
      if (this.done || this.helloText === undefined) throw new E2EError('closed', 'the handshake takes one welcome, after its hello');
      this.done = true;
      const frame = parseObject(welcome, 'e2e welcome');
      if (frame.e2e !== 'welcome') throw new E2EError('malformed', 'expected the e2e welcome');
      if (frame.v !== E2E_VERSION) throw new E2EError('version', `unsupported e2e version (this client speaks v${E2E_VERSION}: the computer's service is older than this page)`);
      const machineNonce = bytesOfLength(frame.nonce, HANDSHAKE_NONCE_BYTES);
      if (!machineNonce) throw new E2EError('malformed', 'the welcome nonce must be 16 bytes of base64url');
      const machineEphemeral = bytesOfLength(frame.eph, KEY_BYTES);
      if (!machineEphemeral) throw new E2EError('malformed', 'the welcome eph must be 32 bytes of base64url');
      const shared = [agree(this.secretKey, this.machineKey), agree(mine, machineEphemeral), agree(mine, this.machineKey), agree(this.secretKey, machineEphemeral)];
      const keys = deriveKeys(E2E_VERSION, shared, this.nonce, machineNonce, transcriptHash(this.helloText, welcome));
      return new SecureChannel(keys.clientToMachine, keys.machineToClient);
    } finally {
      mine.fill(0);
      this.secretKey.fill(0);
    }
  }
}
