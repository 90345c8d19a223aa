/**
 * The audit log's entries as people read them (the phone's Activity screen, the editor's Show Activity):
 * a kind's name, who acted, from where, and the verify answer as one line. Type imports only: the web
 * page bundles this too, without zod.
 */
import type { AuditEntry, AuditKind } from './audit';
import { decisionText } from './permission-text';
import { sourceLabel } from './sources';
import { recordedWords, wordsText } from './tool-words';

/** Every kind, in the order the filters list them (the Record keeps it complete). */
export const AUDIT_KIND_LABEL: Record<AuditKind, string> = {
  'permission.answer': 'Permission answer',
  'rule.added': 'Rule added',
  'rule.removed': 'Rule removed',
  'mode.changed': 'Mode changed',
  'config.changed': 'Settings changed',
  'device.paired': 'Device paired',
  'device.revoked': 'Device revoked',
  login: 'Sign-in',
  'login.failed_burst': 'Failed sign-ins',
  'turn.undone': 'Turn undone',
  backup: 'Backup',
  restore: 'Restore',
  'webhook.tool_run': 'Webhook tool run',
};

export const AUDIT_KINDS = Object.keys(AUDIT_KIND_LABEL) as AuditKind[];

const PERSON_KIND_LABEL: Record<AuditEntry['person']['kind'], string> = {
  owner: 'owner',
  user: 'user',
  device: 'paired device',
  editor: 'editor',
  webhook: 'webhook account',
  cli: 'command line',
  service: 'the service',
};

/**
 * "Pixel 8 (paired device)", "ada (user)", "the owner's access token" (recorded as the owner named
 * `access token`: commands/audit-actor.ts); the editor, the command line, the service by their kind alone.
 */
export function auditPersonLabel(person: AuditEntry['person']): string {
  const kind = PERSON_KIND_LABEL[person.kind] ?? person.kind;
  const name = person.name.trim();
  if (person.kind === 'owner' && name === 'access token') return "the owner's access token";
  return name && name !== person.kind && name !== kind ? `${name} (${kind})` : kind;
}

const PLACE_LABEL: Record<AuditEntry['place']['via'], string> = {
  lan: 'LAN',
  relay: 'via relay',
  editor: 'in the editor',
  webhook: 'webhook',
  cli: 'command line',
  service: 'on this machine',
};

/** "LAN 192.168.1.20", "via relay “main”", "in the editor": where the act came from. */
export function auditPlaceLabel(place: AuditEntry['place']): string {
  const via = PLACE_LABEL[place.via] ?? place.via;
  if (!place.address) return via;
  // A relayed client's address is its relay channel (`relay:<channel>`): the channel's name says it.
  if (place.via === 'relay') return `${via} “${place.address.replace(/^relay:/, '')}”`;
  return `${via} ${place.address}`;
}

/** Whether the place only repeats the person (the editor in the editor, the command line on the command line). */
export function auditPlaceIsPerson(entry: Pick<AuditEntry, 'person' | 'place'>): boolean {
  return !entry.place.address && entry.place.via === entry.person.kind;
}

/**
 * What an entry says, as a person reads it: a permission answer in the card's words ("Allowed: Run npm
 * test", "Always allowed: Edit src/a.ts (rule …)"), not the record's ("Allowed run_command npm test");
 * any other entry, and an answer about a tool without words, as recorded.
 */
export function auditSummaryText(entry: Pick<AuditEntry, 'kind' | 'summary' | 'detail'>): string {
  const { tool, subject, decision, rule, note_present: note } = entry.detail;
  if (entry.kind !== 'permission.answer' || typeof tool !== 'string' || typeof decision !== 'string') return entry.summary;
  const words = recordedWords(tool, subject, 'asked');
  if (!words) return entry.summary;
  const extras = [typeof rule === 'string' ? `rule ${rule}` : '', note === true ? 'with a note' : ''].filter(Boolean).join('; ');
  return `${decisionText(decision)}: ${wordsText(words)}${extras ? ` (${extras})` : ''}`;
}

/**
 * An entry's facts (its `detail`) as [name, text] pairs: names with spaces, a source as people read it, a
 * list of names joined, anything else as JSON; empty values left out. The service records no secret's value.
 */
export function auditFacts(detail: AuditEntry['detail']): [string, string][] {
  return Object.entries(detail)
    .filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([name, value]) => [name.replace(/_/g, ' '), factText(name, value)]);
}

function factText(name: string, value: unknown): string {
  if (typeof value === 'string') return name === 'source' ? sourceLabel(value) : value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

export interface AuditVerdict {
  ok: boolean;
  entries: number;
  first_bad_seq: number | null;
  reason: string | null;
}

/** The verify_audit answer as one sentence: the banner's on the phone, the first row's in the editor. */
export function auditVerdictText(verdict: AuditVerdict): string {
  if (verdict.ok) return `Record verified (${verdict.entries} ${verdict.entries === 1 ? 'entry' : 'entries'})`;
  const where = verdict.first_bad_seq === null ? 'The record was altered' : `The record was altered at entry #${verdict.first_bad_seq}`;
  return verdict.reason ? `${where}: ${verdict.reason}` : where;
}
