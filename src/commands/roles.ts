import { ServiceError, type CommandType } from '../protocol';
import { writableConfigFields } from '../protocol/config';
import { isOwnerClient } from '../protocol/sources';
import type { ClientSession } from './session';

/**
 * Roles (docs/protocol.md, "Roles"). The owner is whoever holds the access token (and the editor, which
 * hosts the service). A session (password) user may chat, read and answer prompts, but not change what
 * guards the machine: permission settings, secrets, where requests (and the key) go, accounts, users.
 */
export const isOwner: (session: ClientSession) => boolean = isOwnerClient;

/**
 * update_config fields a session user may write: provider-neutral tuning only. Not `provider` or
 * `base_url` (they decide where the api_key is sent), `api_key`, `permission_mode`, `permission_rules`,
 * `permission_timeout_seconds` (what guards the machine), nor
 * `system_prompt` / `system_prompt_mode` (they steer the agent in the owner's conversations too, tools included).
 */
const SESSION_WRITABLE_FIELDS: ReadonlySet<string> = new Set(['model', 'temperature', 'max_tokens']);

/**
 * The owner's administration, not chatting: webhook accounts' deliveries, pairing a phone (its secret
 * is spent for an owner's credential), the paired devices, backups, and undoing a turn. Checked by the dispatcher, for every transport.
 */
const OWNER_ONLY_COMMANDS: ReadonlySet<CommandType> = new Set<CommandType>([
  'list_deliveries',
  'retry_delivery',
  'create_pairing',
  'create_lan_pairing',
  'list_devices',
  'revoke_device',
  // A copy of everything, service.json's secrets included, written where the caller says.
  'backup',
  // It rewrites files on the machine (docs/protocol.md, "Undoing a turn").
  'undo_turn',
  // Who did what from where (docs/protocol.md, "Audit log"): the owner's record, not a user's to read.
  'list_audit',
  'verify_audit',
  // They change the person's own branch, a remote, or throw work away (docs/protocol.md, "Review and land").
  'land_changes',
  'push_changes',
  'discard_changes',
]);

export function requireOwnerFor(type: CommandType, session: ClientSession): void {
  if (OWNER_ONLY_COMMANDS.has(type) && !isOwner(session)) {
    throw new ServiceError('unauthorized', `${type} needs the owner (the access token, or a paired device)`);
  }
}

let ownerWritableFields: ReadonlySet<string> | undefined;
/** The settings only the owner may change (made at the first update_config: its schema is built lazily). */
const ownerWritable = () => (ownerWritableFields ??= new Set(writableConfigFields().filter((field) => !SESSION_WRITABLE_FIELDS.has(field))));

/**
 * Throws `unauthorized` naming the settings of an update_config patch this session may not change
 * (fields that are not settings at all are left to the validation: invalid_request).
 */
export function requireWritableBy(session: ClientSession, patch: Record<string, unknown>): void {
  if (isOwner(session)) return;
  const forbidden = Object.keys(patch).filter((field) => ownerWritable().has(field));
  if (forbidden.length > 0) {
    throw new ServiceError('unauthorized', `a session (password) user may not change ${forbidden.join(', ')}; use the access token`);
  }
}
