import { ProviderFailure } from '../agent/agent';
import type { ProviderErrorKind } from '../agent/providers/types';
import { ServiceError } from '../protocol';

/** What to do about a webhook message whose turn failed. */
export interface TurnFailure {
  /** Worth trying again later: the provider may answer then. */
  transient: boolean;
  /** Clean text for the sender's error callback and the log (never a credential: ProviderError's rule). */
  message: string;
  /** The provider asked to wait this long (Retry-After). */
  retryAfterMs?: number;
}

/**
 * Provider failures that may pass: overloaded or rate limited (5xx, 429), no answer in time, the
 * network, and a garbled answer. The others (`auth`, `bad_request`, `not_configured`) need a person to
 * change something, so retrying only delays telling the sender.
 */
const TRANSIENT_KINDS: ReadonlySet<ProviderErrorKind> = new Set(['rate_limited', 'timeout', 'unavailable', 'network', 'bad_response']);

/** Classifies by the provider's failure kind (never by its message text). */
export function turnFailureOf(error: unknown): TurnFailure {
  if (error instanceof ProviderFailure) {
    const { kind, message, retryAfterMs } = error.failure;
    return { transient: TRANSIENT_KINDS.has(kind), message, retryAfterMs };
  }
  if (error instanceof ServiceError) return { transient: false, message: error.message };
  return { transient: false, message: 'internal error' };
}
