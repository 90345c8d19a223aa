import { ServiceError } from '../protocol';
import { ProviderFailure } from './agent';
import { withoutPaths } from './providers/redact';
import type { ProviderErrorKind } from './providers/types';

/**
 * A failed turn, told to people: the webhook inbox decides by it whether to try again and what the
 * sender's error callback says; `turn.ended` (and the push it causes) says `forSender`.
 */
export interface TurnFailure {
  /** Worth trying again later: the provider may answer then. */
  transient: boolean;
  /** The provider's own account of it, for the log and the owner (it may name the base URL or the model). */
  detail: string;
  /**
   * What the sender's error callback says: the kind of failure and the HTTP status only. The sender is a
   * third party: the provider's text may name the internal base URL, the model, or quote the request.
   */
  forSender: string;
  /** The provider asked to wait this long (Retry-After). */
  retryAfterMs?: number;
  /** A provider's failure: its kind and name, for a client to word (`turn.ended`'s `reason` and `provider`). */
  reason?: Exclude<ProviderErrorKind, 'cancelled'>;
  provider?: string;
}

/**
 * Provider failures that may pass: overloaded or rate limited (5xx, 429), no answer in time, the
 * network, and a garbled answer. The others (`auth`, `bad_request`, `not_configured`) need a person to
 * change something, so retrying only delays telling the sender.
 */
const TRANSIENT_KINDS: ReadonlySet<ProviderErrorKind> = new Set(['rate_limited', 'timeout', 'unavailable', 'network', 'bad_response']);

const FOR_SENDER: Record<ProviderErrorKind, string> = {
  auth: "the model provider refused the assistant's credentials",
  bad_request: 'the model provider refused the request',
  not_configured: 'the assistant has no usable model provider configured',
  rate_limited: 'the model provider is rate limiting the assistant',
  timeout: 'the model provider did not answer in time',
  unavailable: 'the model provider is unavailable',
  network: 'the model provider could not be reached',
  bad_response: 'the model provider gave an unreadable answer',
  cancelled: 'the answer was cancelled',
};

/** Classifies by the provider's failure kind and status (never by its message text). */
export function turnFailureOf(error: unknown): TurnFailure {
  if (error instanceof ProviderFailure) {
    const { kind, message, status, retryAfterMs, provider } = error.failure;
    const forSender = `${FOR_SENDER[kind]}${status !== undefined ? ` (HTTP ${status})` : ''}`;
    return { transient: TRANSIENT_KINDS.has(kind), detail: message, forSender, retryAfterMs, ...(kind !== 'cancelled' ? { reason: kind, provider } : {}) };
  }
  // A ServiceError's message is meant for clients, but may quote git's words naming a folder of the
  // machine (a repository's git folder elsewhere, a home or temp folder): not the sender's to know.
  // Anything else is not shown.
  if (error instanceof ServiceError) return { transient: false, detail: error.message, forSender: withoutPaths(error.message) };
  return { transient: false, detail: error instanceof Error ? error.message : String(error), forSender: 'internal error' };
}
