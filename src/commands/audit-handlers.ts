import type { CommandOf, ResultOf } from '../protocol';
import type { CommandContext } from './context';
import { readDurable } from './durable-read';
import type { ClientSession } from './session';

/** An ISO time as stored (UTC with milliseconds), so the log's times compare as text. */
const storedTime = (iso: string | undefined) => (iso === undefined ? undefined : new Date(iso).toISOString());

/** `list_audit` (owner only, roles.ts): entries newest first, filtered, paged by seq (`before`). */
export async function listAudit(command: CommandOf<'list_audit'>, _session: ClientSession, ctx: CommandContext): Promise<ResultOf<'list_audit'>> {
  const page = ctx.store.audit.list({
    kinds: command.kind === undefined ? undefined : Array.isArray(command.kind) ? command.kind : [command.kind],
    person: command.person,
    conversationId: command.conversation_id,
    since: storedTime(command.since),
    until: storedTime(command.until),
    before: command.before,
    limit: command.limit,
  });
  await readDurable(ctx.store);
  return page;
}

/** `verify_audit` (owner only): walks the hash chain from its anchor and says where it first breaks. */
export async function verifyAudit(_command: CommandOf<'verify_audit'>, _session: ClientSession, ctx: CommandContext): Promise<ResultOf<'verify_audit'>> {
  return ctx.store.audit.verify();
}
