import type { CommandOf, ResultOf } from '../protocol';
import type { CommandContext } from './context';
import type { ClientSession } from './session';
import { actorOf } from './audit-actor';
import { readDurable } from './durable-read';

/**
 * undo_turn and list_turn_changes (docs/protocol.md, "Undoing a turn"). undo_turn is the owner's
 * (roles.ts): it writes files on the machine, and a session (password) user is not a distinct person
 * whose "own" turns could be told apart. Both answer not_found for a conversation the session may not see.
 */
export async function undoTurn(command: CommandOf<'undo_turn'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'undo_turn'>> {
  ctx.agent.requireConversation(command.conversation_id, session.source);
  return ctx.undo.undo(command.conversation_id, command.message_id, command.confirm, actorOf(session, ctx.store.devices));
}

export async function listTurnChanges(command: CommandOf<'list_turn_changes'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'list_turn_changes'>> {
  ctx.agent.requireConversation(command.conversation_id, session.source);
  const turns = await ctx.undo.turns(command.conversation_id);
  await readDurable(ctx.store);
  return { turns };
}
