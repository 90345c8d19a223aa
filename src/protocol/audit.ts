import * as z from 'zod';
import { command } from './command-frame';
import { lazySchema } from './lazy-schema';

/**
 * The audit log (docs/protocol.md, "Audit log"): who did what that guards or changes the machine, from
 * where. Kept in the store, append-only, each entry's `hash` chaining the one before it, so a removed or
 * edited entry is found by verify_audit. Owner only.
 */

export const AuditKind = lazySchema(() =>
  z.enum([
    'permission.answer',
    'rule.added',
    'rule.removed',
    'mode.changed',
    'config.changed',
    'device.paired',
    'device.revoked',
    'login',
    'login.failed_burst',
    'turn.undone',
    'backup',
    'restore',
    'webhook.tool_run',
  ]),
);
export type AuditKind = z.infer<typeof AuditKind>;

/** Who acted: a paired device by its name, a password user by name, an editor window, a webhook account, the CLI, the service itself. */
export const AuditPerson = lazySchema(() =>
  z.object({
    kind: z.enum(['owner', 'user', 'device', 'editor', 'webhook', 'cli', 'service']),
    name: z.string(),
  }),
);
export type AuditPerson = z.infer<typeof AuditPerson>;

/** From where: the editor, the LAN (with the client's address), the relay, a webhook, the CLI, or the service itself. */
export const AuditPlace = lazySchema(() =>
  z.object({
    via: z.enum(['editor', 'lan', 'relay', 'webhook', 'cli', 'service']),
    address: z.string().optional(),
  }),
);
export type AuditPlace = z.infer<typeof AuditPlace>;

/** Who acted and from where: what every entry records of the actor. */
export interface AuditActor {
  person: AuditPerson;
  place: AuditPlace;
}

export const AuditEntry = lazySchema(() =>
  z.object({
    /** 1, 2, 3... without gaps (older entries may have been pruned by `audit.max_days`). */
    seq: z.number().int(),
    /** ISO 8601 UTC with milliseconds. */
    at: z.string(),
    kind: AuditKind,
    person: AuditPerson,
    place: AuditPlace,
    conversation_id: z.string().optional(),
    /** One line for people, e.g. "Allowed write_file src/a.ts". */
    summary: z.string(),
    /** Kind-specific facts (tool, subject, preview_sha256, decision, fields by name...): never a secret's value. */
    detail: z.record(z.string(), z.unknown()),
    /** Hex sha256 over the previous entry's hash and this entry's canonical JSON without `hash`. */
    hash: z.string(),
  }),
);
export type AuditEntry = z.infer<typeof AuditEntry>;

/** The most entries one list_audit answers; the default. */
export const MAX_AUDIT_LIMIT = 500;
export const DEFAULT_AUDIT_LIMIT = 100;

const isoTime = (what: string) => z.iso.datetime({ offset: true, error: `${what} must be an ISO 8601 time` });

/** Entries newest first, filtered; page with `before` (the last entry's seq, or `next_before`). */
export const ListAuditCommand = lazySchema(() =>
  command('list_audit', {
    kind: z.union([AuditKind, z.array(AuditKind).min(1, { error: 'kind must name at least one kind' })]).optional(),
    person: z.string({ error: 'person must be a string' }).min(1, { error: 'person must not be empty' }).max(200).optional(),
    conversation_id: z.string({ error: 'conversation_id must be a string' }).min(1, { error: 'conversation_id must not be empty' }).optional(),
    since: isoTime('since').optional(),
    until: isoTime('until').optional(),
    before: z.number({ error: 'before must be an integer' }).int({ error: 'before must be an integer' }).min(1, { error: 'before must be at least 1' }).optional(),
    limit: z
      .number({ error: 'limit must be an integer' })
      .int({ error: 'limit must be an integer' })
      .min(1, { error: 'limit must be at least 1' })
      .max(MAX_AUDIT_LIMIT, { error: `limit must be at most ${MAX_AUDIT_LIMIT}` })
      .default(DEFAULT_AUDIT_LIMIT),
  }),
);

/** Walks the whole chain and says where it first breaks. */
export const VerifyAuditCommand = lazySchema(() => command('verify_audit', {}));

export const AuditResults = lazySchema(() => ({
  list_audit: z.object({
    entries: z.array(AuditEntry),
    /** Send as `before` for the next (older) page; null when there is none. */
    next_before: z.number().int().nullable(),
  }),
  verify_audit: z.object({
    ok: z.boolean(),
    /** Entries checked. */
    entries: z.number().int(),
    /** The first entry whose hash or place in the chain is wrong (a removed or edited entry); null when ok. */
    first_bad_seq: z.number().int().nullable(),
    reason: z.string().nullable(),
  }),
}));

/** To the owner's sessions as entries are recorded. */
export const AuditAppendedEvent = lazySchema(() =>
  z.object({
    event: z.literal('audit.appended'),
    entry: AuditEntry,
  }),
);
export type AuditAppendedEvent = z.infer<typeof AuditAppendedEvent>;
