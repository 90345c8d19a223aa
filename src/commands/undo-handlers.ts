import type { CommandOf, ResultOf } from '../protocol';
import { canAccess } from '../protocol/sources';
import type { UndoTurnResult } from '../protocol/undo';
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
  const conversation = ctx.agent.requireConversation(command.conversation_id, session.source);
  const result = await ctx.undo.undo(command.conversation_id, command.message_id, command.confirm, actorOf(session, ctx.store.devices));
  if (result.files.some((f) => f.outcome === 'restored' || f.outcome === 'deleted')) announceUndone(ctx, result, conversation.source);
  return result;
}

/**
 * `turn.undone` to every client that may see the conversation (as conversation.deleted): a page showing
 * the turn marks it, whichever client undid it. `undone` as list_turn_changes says it (one home: its query).
 */
function announceUndone(ctx: CommandContext, result: UndoTurnResult, owner: string): void {
  const undone = ctx.store.fileChanges.turns(result.conversation_id).find((t) => t.turn_id === result.turn_id)?.undone === true;
  const event = { event: 'turn.undone', conversation_id: result.conversation_id, turn_id: result.turn_id, message_id: result.message_id, undone } as const;
  ctx.events.broadcast(event, (session) => canAccess(session.source, owner));
}

export async function listTurnChanges(command: CommandOf<'list_turn_changes'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'list_turn_changes'>> {
  ctx.agent.requireConversation(command.conversation_id, session.source);
  const turns = await ctx.undo.turns(command.conversation_id);
  await readDurable(ctx.store);
  return { turns };
}
