import { E2EError, canonicalPublicKey, fromBase64url, type Hello } from '../../tunnel';
import { noble } from '../../tunnel/noble';
import type { Logger } from '../../log/logger';
import type { RegisteredKey, Store } from '../../store';
import type { PairingSecrets } from '../pairing/pairing-secrets';

export type Admission = 'registered' | 'paired';

/**
 * Which client keys may open a tunnel (docs/relay.md step 3): keys registered with `POST /ws/register`
 * or by an earlier pairing, and a key whose hello proves a live one-time pairing secret (it is then
 * registered, and the secret is spent). A key that has spoken e2e v2 is refused v1 hellos: v1 keys come
 * from the long-term keys alone, so whoever holds a copy of the machine's store could open a v1 tunnel
 * as that phone knowing only its public key (and a relay posing as the machine reads its token).
 */
export class ClientKeys {
  constructor(
    private readonly store: Store,
    private readonly pairings: PairingSecrets,
    private readonly logger: Logger,
  ) {}

  /** This key's registrations (it may be registered under several names, in other spellings). */
  private registrationsOf(clientKey: string): RegisteredKey[] {
    return this.store.registrations.keys().filter((stored) => canonicalPublicKey(stored.public_key) === clientKey);
  }

  isRegistered(clientKey: string): boolean {
    return this.registrationsOf(clientKey).length > 0;
  }

  /** Throws E2EError for a v1 hello of a key that has spoken v2. */
  async admit(hello: Hello): Promise<Admission | undefined> {
    const registered = this.registrationsOf(hello.clientKey);
    if (registered.length > 0) {
      if (hello.version === 1 && registered.some((stored) => stored.e2e_v2)) throw new E2EError('version', 'this client key has spoken e2e v2: a v1 hello is refused');
      return 'registered';
    }
    if (!hello.pair || !this.pairings.redeem(hello.clientKeyBytes, hello.pair)) return undefined;
    // Paired through a v2 hello: v2 only from the start (the phone page speaks nothing else).
    await this.store.registrations.upsert(pairedDeviceName(hello.clientKey), hello.clientKey, undefined, hello.version === 2);
    this.logger.info('relay.client_paired', { client_key: hello.clientKey.slice(0, 8), e2e: hello.version });
    return 'paired';
  }

  /**
   * A v2 session of this key opened its first box (the peer holds the key: a hello alone proves nothing,
   * and marking on it would let anyone lock an older v1 client out): no v1 hello of it is taken again.
   */
  async spokeV2(clientKey: string): Promise<void> {
    const unmarked = this.registrationsOf(clientKey).filter((stored) => !stored.e2e_v2);
    if (unmarked.length > 0) await this.store.registrations.markE2eV2(unmarked.map((stored) => stored.public_key));
  }
}

/**
 * The registration name of a phone paired through the relay (`machine_name` of `POST /ws/register`):
 * the whole canonical key, so a pairing never replaces the row of another key (a prefix could be shared).
 */
export function pairedDeviceName(clientKey: string): string {
  return `paired-${clientKey}`;
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
    const { x25519 } = noble();
    x25519.getSharedSecret(x25519.utils.randomSecretKey(), fromBase64url(key)!);
    return key;
  } catch {
    return undefined;
  }
}
