import type { PermissionDecision } from '../protocol';
import { decisionText } from '../protocol/permission-text';
import type { PermissionRequestRow } from '../store';
import type { PermissionOutcome } from './permissions';

/** What the model reads when a restart (or a stop) ended the wait. */
export const RESTARTED_WHY = 'the service restarted while this waited for permission';

/** The tool result of a call denied without a person's note. */
export function deniedText(why: string): string {
  return `Permission denied: ${why}. Do not retry it; answer without it.`;
}

/** A decision in the audit log's summary: as entries already recorded word it (`Allowed always`). */
export function auditDecisionText(decision: PermissionDecision): string {
  return decision === 'allow_always' ? 'Allowed always' : decisionText(decision);
}

/**
 * The tool result of a call the gate refused, for the model: the person's note as it is (it may say
 * what to do instead), else why (the source's policy, nobody answering, a cancel, a restart).
 */
export function refusalText(outcome: PermissionOutcome, tool: string): string {
  if (outcome.note) return `Permission denied: the user denied ${tool}: ${outcome.note}`;
  return deniedText(refusalWhy(outcome, tool));
}

function refusalWhy(outcome: PermissionOutcome, tool: string): string {
  switch (outcome.reason) {
    case 'source':
      return 'tools are not enabled for messages from this source';
    case 'rule':
      return outcome.rule !== undefined ? ruleDeniedWhy(outcome.rule) : `the user did not allow ${tool} to run`;
    case 'mode':
      return MODE_DENIED_WHY;
    case 'expired':
      return `nobody answered within ${durationText(outcome.waitedMs ?? 0)}`;
    case 'cancelled':
      return 'the chat was cancelled';
    case 'restarted':
      return RESTARTED_WHY;
    default:
      return `the user did not allow ${tool} to run`;
  }
}

/** What a late permission_response is told (`conflict`): who decided, or why the request ended. */
export function conflictMessage(row: PermissionRequestRow): string {
  const resolution = row.resolution!;
  switch (resolution.reason) {
    case 'answered': {
      // Named as the pages name senders (web/sender-name.ts): a credential's kind ("access token", how the
      // audit log records a script's or page's answer with the computer's token) is not a person's word.
      const by = resolution.decidedBy === 'editor' ? 'the editor' : resolution.decidedBy === 'access token' ? 'this computer' : (resolution.decidedBy ?? 'someone else');
      return `already ${decisionText(resolution.decision).toLowerCase()} from ${by}`;
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
