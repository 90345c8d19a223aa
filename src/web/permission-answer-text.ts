/**
 * The one place the page turns a permission answer into words: the answer to its own
 * `permission_response` (a prompt card, the "Needs you" list, a notification's Allow / Deny), and a
 * request that ended elsewhere (`permission.resolved`, or gone from the list).
 */
import type { EnvelopeOf } from '../protocol';
import type { ResolvedEvent } from '../protocol/pending-requests';
import { decisionText } from '../protocol/permission-text';

/**
 * The service's answer to `permission_response`: what to say, and whether the request is settled (decided
 * here or elsewhere, or no longer waiting) or still waits (another refusal: the words are the error's).
 */
export function answerText(answer: EnvelopeOf<'permission_response'>): { text: string; settled: boolean } {
  if (answer.status === 'ok') {
    const { decision, decided_by: by, already_decided: already, rule_added: rule } = answer.data;
    const words = already ? `Already ${decisionText(decision).toLowerCase()}` : decisionText(decision);
    return { text: `${words}${by ? ` from ${by}` : ''}.${rule ? ` Rule added: ${rule}` : ''}`, settled: true };
  }
  // `conflict` says who decided otherwise, or that it expired.
  if (answer.code === 'conflict') return { text: capitalize(answer.error), settled: true };
  if (answer.code === 'not_found') return { text: GONE_TEXT, settled: true };
  return { text: answer.error || 'The answer was refused.', settled: false };
}

/** A request that stopped waiting while this page was away, or that the service does not know. */
export const GONE_TEXT = 'No longer waiting: it was answered or expired.';

/** `permission.resolved`: who decided, or why nobody did. */
export function resolvedText(event: ResolvedEvent): string {
  switch (event.reason) {
    case 'expired':
      return 'Expired: nobody answered in time (denied).';
    case 'cancelled':
      return 'The chat was cancelled.';
    case 'restarted':
      return 'The service restarted while this waited (denied).';
  }
  const by = event.decided_by ? ` from ${event.decided_by}` : '';
  const rule = event.rule_added ? ` Rule added: ${event.rule_added}` : '';
  return `${decisionText(event.decision)}${by}.${rule}`;
}

function capitalize(text: string): string {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}
