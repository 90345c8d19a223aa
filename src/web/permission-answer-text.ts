/**
 * The one place the page turns a permission answer into words: the answer to its own
 * `permission_response` (a prompt card, the "Needs you" list, a notification's Allow / Deny), and a
 * request that ended elsewhere (`permission.resolved`, or gone from the list).
 */
import type { EnvelopeOf } from '../protocol';
import type { ResolvedEvent } from '../protocol/pending-requests';
import { decisionText } from '../protocol/permission-text';
import { senderName } from './sender-name';

/**
 * The service's answer to `permission_response`: what to say, and whether the request is settled (decided
 * here or elsewhere, or no longer waiting) or still waits (another refusal: the words are the error's).
 */
export function answerText(answer: EnvelopeOf<'permission_response'>, self?: string): { text: string; settled: boolean } {
  if (answer.status === 'ok') {
    const { decision, decided_by: decidedBy, already_decided: already, rule_added: rule } = answer.data;
    const words = already ? `Already ${decisionText(decision).toLowerCase()}` : decisionText(decision);
    // Decided by this page: no name (`self`, the hello's acting_as); by someone else: who.
    const by = senderName(decidedBy, self);
    return { text: `${words}${by ? ` from ${by}` : ''}.${rule ? ` Rule added: ${rule}` : ''}`, settled: true };
  }
  // `conflict` says who decided otherwise, or that it expired.
  if (answer.code === 'conflict') return { text: capitalize(answer.error), settled: true };
  if (answer.code === 'not_found') return { text: GONE_TEXT, settled: true };
  return { text: answer.error || 'The answer was refused.', settled: false };
}

/** A request that stopped waiting while this page was away, or that the service does not know. */
export const GONE_TEXT = 'No longer waiting: it was answered or expired.';

/** `permission.resolved`: who decided (nobody named when it was this page, `self`), or why nobody did. */
export function resolvedText(event: ResolvedEvent, self?: string): string {
  switch (event.reason) {
    case 'expired':
      return 'Expired: nobody answered in time (denied).';
    case 'cancelled':
      return 'The chat was cancelled.';
    case 'restarted':
      return 'The service restarted while this waited (denied).';
  }
  const name = senderName(event.decided_by, self);
  const by = name ? ` from ${name}` : '';
  const rule = event.rule_added ? ` Rule added: ${event.rule_added}` : '';
  return `${decisionText(event.decision)}${by}.${rule}`;
}

function capitalize(text: string): string {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}
