import { randomBytes } from 'node:crypto';
import { proofMatches } from '../../tunnel';

export const PAIRING_TTL_SECONDS = 600;
/** Live secrets at most; making another drops the oldest. */
const MAX_LIVE = 16;

interface LiveSecret {
  expiresAt: number;
  /** A relay client's end-to-end hello proved it (its key is registered); `auth` may still spend it once. */
  claimed: boolean;
}

/**
 * One-time pairing secrets (docs/relay.md §Pairing): valid 10 minutes. A relayed phone's hello proves
 * one (claim: registers its key; no second key may claim it), then its `auth` spends it for a device
 * credential (spend); a LAN phone only spends it. Kept in memory only: a restart voids the pairings not yet used.
 */
export class PairingSecrets {
  private readonly live = new Map<string, LiveSecret>();

  constructor(private readonly now: () => number = Date.now) {}

  create(): { secret: string; expiresIn: number } {
    this.sweep();
    if (this.live.size >= MAX_LIVE) this.live.delete(this.live.keys().next().value as string);
    const secret = randomBytes(32).toString('base64url');
    this.live.set(secret, { expiresAt: this.now() + PAIRING_TTL_SECONDS * 1000, claimed: false });
    return { secret, expiresIn: PAIRING_TTL_SECONDS };
  }

  /** Claims the live, unclaimed secret that `proof` was made with, if any; true when one was. */
  redeem(clientKey: Uint8Array, proof: Uint8Array): boolean {
    this.sweep();
    for (const [secret, entry] of this.live) {
      if (!entry.claimed && proofMatches(secret, clientKey, proof)) {
        entry.claimed = true;
        return true;
      }
    }
    return false;
  }

  /** Spends a live secret (claimed or not) for a device credential; true when it was live. */
  spend(secret: string): boolean {
    this.sweep();
    return this.live.delete(secret);
  }

  get size(): number {
    this.sweep();
    return this.live.size;
  }

  private sweep(): void {
    const now = this.now();
    for (const [secret, entry] of this.live) if (entry.expiresAt <= now) this.live.delete(secret);
  }
}
