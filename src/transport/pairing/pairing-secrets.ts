import { randomBytes } from 'node:crypto';
import { proofMatches } from '../../tunnel';

export const PAIRING_TTL_SECONDS = 600;
/** Live secrets at most; making another drops the oldest. */
const MAX_LIVE = 16;

/**
 * One-time pairing secrets (docs/relay.md §Pairing): valid 10 minutes, spent by the first client whose
 * hello proves it. Kept in memory only: a restart voids the pairings not yet used.
 */
export class PairingSecrets {
  private readonly live = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  create(): { secret: string; expiresIn: number } {
    this.sweep();
    if (this.live.size >= MAX_LIVE) this.live.delete(this.live.keys().next().value as string);
    const secret = randomBytes(32).toString('base64url');
    this.live.set(secret, this.now() + PAIRING_TTL_SECONDS * 1000);
    return { secret, expiresIn: PAIRING_TTL_SECONDS };
  }

  /** Spends the live secret that `proof` was made with, if any; true when one was. */
  redeem(clientKey: Uint8Array, proof: Uint8Array): boolean {
    this.sweep();
    for (const secret of this.live.keys()) {
      if (proofMatches(secret, clientKey, proof)) {
        this.live.delete(secret);
        return true;
      }
    }
    return false;
  }

  get size(): number {
    this.sweep();
    return this.live.size;
  }

  private sweep(): void {
    const now = this.now();
    for (const [secret, expiresAt] of this.live) if (expiresAt <= now) this.live.delete(secret);
  }
}
