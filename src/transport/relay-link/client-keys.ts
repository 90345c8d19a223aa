import { x25519 } from '@noble/curves/ed25519.js';
import { canonicalPublicKey, fromBase64url, type Hello } from '../../tunnel';
import type { Logger } from '../../log/logger';
import type { Store } from '../../store';
import type { PairingSecrets } from '../pairing/pairing-secrets';

export type Admission = 'registered' | 'paired';

/**
 * Which client keys may open a tunnel (docs/relay.md step 3): keys registered with `POST /ws/register`
 * or by an earlier pairing, and a key whose hello proves a live one-time pairing secret (it is then
 * registered, and the secret is spent).
 */
export class ClientKeys {
  constructor(
    private readonly store: Store,
    private readonly pairings: PairingSecrets,
    private readonly logger: Logger,
  ) {}

  isRegistered(clientKey: string): boolean {
    return this.store.registrations.publicKeys().some((stored) => canonicalPublicKey(stored) === clientKey);
  }

  async admit(hello: Hello): Promise<Admission | undefined> {
    if (this.isRegistered(hello.clientKey)) return 'registered';
    if (!hello.pair || !this.pairings.redeem(hello.clientKeyBytes, hello.pair)) return undefined;
    await this.store.registrations.upsert(pairedDeviceName(hello.clientKey), hello.clientKey);
    this.logger.info('relay.client_paired', { client_key: hello.clientKey.slice(0, 8) });
    return 'paired';
  }
}

/** The registration name of a phone paired through the relay (`machine_name` of `POST /ws/register`). */
export function pairedDeviceName(clientKey: string): string {
  return `paired-${clientKey.slice(0, 12)}`;
}

/**
 * A client key offered to `POST /ws/register`, in its one canonical spelling; undefined unless it is an
 * X25519 public key (32 bytes, base64url or base64) the handshake can use: a low-order point would give
 * an all-zero shared secret, which the handshake refuses, so it is refused here already.
 */
export function registrableClientKey(text: unknown): string | undefined {
  const key = canonicalPublicKey(text);
  if (!key) return undefined;
  try {
    x25519.getSharedSecret(x25519.utils.randomSecretKey(), fromBase64url(key)!);
    return key;
  } catch {
    return undefined;
  }
}
