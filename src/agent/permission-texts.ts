import type { PermissionDecision } from '../protocol';
import type { PermissionRequestRow } from '../store';

/** What the model reads when a restart (or a stop) ended the wait. */
export const RESTARTED_WHY = 'the service restarted while this waited for permission';

/** The tool result of a call denied without a person's note. */
export function deniedText(why: string): string {
  return `Permission denied: ${why}. Do not retry it; answer without it.`;
}

const PAST_TENSE: Record<PermissionDecision, string> = {
  allow: 'allowed',
  allow_session: 'allowed for this conversation',
  allow_always: 'always allowed',
  deny: 'denied',
};

/** What a late permission_response is told (`conflict`): who decided, or why the request ended. */
export function conflictMessage(row: PermissionRequestRow): string {
  const resolution = row.resolution!;
  switch (resolution.reason) {
    case 'answered': {
      const by = resolution.decidedBy === 'editor' ? 'the editor' : (resolution.decidedBy ?? 'someone else');
      return `already ${PAST_TENSE[resolution.decision as PermissionDecision] ?? resolution.decision} from ${by}`;
    }
    case 'expired':
      return `expired: nobody answered within ${durationText(Date.parse(row.request.expires_at) - Date.parse(row.request.created_at))}`;
    case 'cancelled':
      return 'cancelled: the chat was cancelled before anyone answered';
    default:
      return `ended: ${RESTARTED_WHY}`;
  }
}

/** `30 minutes`, `1 hour`, `90 seconds`. */
export function durationText(ms: number): string {
  const seconds = Math.max(1, Math.round(ms / 1000));
  const [count, unit] = seconds % 3600 === 0 ? [seconds / 3600, 'hour'] : seconds % 60 === 0 ? [seconds / 60, 'minute'] : [seconds, 'second'];
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

/** Why a deny rule refused a call, naming the rule (a rule's deny is not a person's). */
export function ruleDeniedWhy(rule: string): string {
  return `the deny rule "${rule}" of the permission rules refused it (a rule, not a person)`;
}

/** Why `permission_mode: "deny"` refused a call. */
export const MODE_DENIED_WHY = 'the permission mode is "deny", so no tool runs (a setting, not a person)';
