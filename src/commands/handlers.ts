import { publicConfigOf } from '../config/public-config';
import { toolInfo } from '../agent/tools/registry';
import type { ConversationActivity } from '../agent/conversation-activity';
import type { InstructionFileInfo } from '../agent/agent';
import type { ConversationRow, Store } from '../store';
import { readDurable } from './durable-read';
import {
  contextChars,
  MAX_CONTEXT_CHARS,
  planSummaryOf,
  ServiceError,
  type CommandOf,
  type CommandType,
  type Conversation,
  type Message,
  type PublicConfig,
  type ResultOf,
  type ServiceConfig,
  sharedResult,
} from '../protocol';
import type { CommandContext } from './context';
import { sourceText, type Source } from '../protocol/sources';
import { pushHandlers } from './push-handlers';
import { createPairing, relayStatus } from './relay-handlers';
import { createLanPairing, listDevices, revokeDevice } from './device-handlers';
import { listTurnChanges, undoTurn } from './undo-handlers';
import { isOwner, requireWritableBy } from './roles';
import { ownConversationsSource, personOf, type ClientSession } from './session';
import { getUsage } from './usage-handlers';
import { conversationUsageOf } from '../agent/usage/usage-wire';
import { clientMessagesOf } from './conversation-export';
import { historyHandlers } from './history-handlers';
import { attachmentHandlers, chatAttachments } from './attachment-handlers';
import { listAudit, verifyAudit } from './audit-handlers';
import { actorOf, sessionLabel } from './audit-actor';
import { agentContextHandlers } from './agent-context-handlers';
import { infoOf as worktreeInfoOf, worktreeByDefault } from '../agent/worktrees/worktrees';
import { requireDeleteConfirmed, reviewHandlers } from './review-handlers';
import { withField } from './with-field';
import { lastUnanswered } from '../protocol/unanswered';
import { conversationGone } from './conversation-gone';

/** A command's handler answers with its command's result (protocol/results.ts): a drift is a compile error. */
type Handler<T extends CommandType> = (command: CommandOf<T>, session: ClientSession, ctx: CommandContext) => Promise<ResultOf<T>>;
export type HandlerMap = { [T in CommandType]: Handler<T> };

/**
 * get_config's answer while nothing in it changes: the configuration (frozen, replaced on change), the
 * asking source (its new-chat toggle) and the instruction files in force (the same frozen array while
 * unchanged: agent.rootInstructionFiles). One shared answer per source, its text made once (sharedResult):
 * serializing it again was the largest cost of a get_config round trip after the socket's write (`npm run
 * bench -- ws`, issue 25). Sources are few (the LAN, the relay, the editor, service.json's webhook
 * accounts), so one entry each.
 */
const configAnswers = new Map<string, { config: ServiceConfig; instructions: readonly InstructionFileInfo[]; files: string; answer: Readonly<ResultOf<'get_config'>> }>();
function configAnswerFor(config: ServiceConfig, source: Source, instructions: readonly InstructionFileInfo[]): Readonly<ResultOf<'get_config'>> {
  const key = sourceText(source);
  const kept = configAnswers.get(key);
  if (kept?.config === config && kept.instructions === instructions) return kept.answer;
  // Files looked at afresh (a linked one is never kept) come as a new array: the same names and sizes keep the answer.
  const files = JSON.stringify(instructions);
  if (kept?.config === config && kept.files === files) return kept.answer;
  const answer = sharedResult(withField(withField(publicConfigOf(config), 'instructions', [...instructions]), 'worktrees', worktreeSettingsOf(config, source)));
  configAnswers.set(key, { config, instructions, files, answer });
  return answer;
}

/** get_config's `worktrees`: service.json's settings, and where the asking client's new-chat toggle starts. */
function worktreeSettingsOf(config: ServiceConfig, source: Source): NonNullable<PublicConfig['worktrees']> {
  const { default: defaults, folder, allow_hooks } = config.worktrees;
  return { default: { ...defaults }, folder: folder ?? null, allow_hooks, new_chat: worktreeByDefault(config, source) };
}

/** A stored conversation as clients see it (list_conversations rows, conversation.updated), with what it is doing now. */
export function conversationOf(
  { id, title, created_at, updated_at, source, last_message, started_by }: ConversationRow,
  activity: ConversationActivity,
  store: Pick<Store, 'usage' | 'conversations' | 'worktrees'>,
): Conversation {
  const { state, pendingPermissions, queued } = activity.of(id);
  const usage = conversationUsageOf(store.usage.ofConversation(id));
  const plan = store.conversations.planOf(id);
  // From the row: its counts were taken at the conversation's last turn end (no git call per listed row).
  const worktree = store.worktrees.get(id);
  return {
    id,
    title,
    created_at,
    updated_at,
    source,
    started_by,
    state,
    pending_permissions: pendingPermissions,
    last_message,
    queued,
    usage,
    ...(plan ? { plan_summary: planSummaryOf(plan) } : {}),
    worktree: worktree ? worktreeInfoOf(worktree) : null,
  };
}

/** Every command's handler. */
export const handlers: HandlerMap = {
  async auth() {
    throw new ServiceError('invalid_request', 'already authenticated');
  },

  async chat(command, session, ctx) {
    // Checked before the turn starts (a resend gets the original result unchecked): a chat naming an
    // attachment it may not use, or too much context, is refused whole.
    // Its files are held from the check until the chat is answered: waiting behind a running turn, the message
    // (which binds them) is stored only when its turn comes, and neither newer uploads nor the deletion of the
    // conversations that carry them may drop them meanwhile (store/attachment-holds.ts).
    let release = (): void => undefined;
    const check = () => {
      const contextSize = contextChars(command.context ?? []);
      if (contextSize > MAX_CONTEXT_CHARS) {
        throw new ServiceError('payload_too_large', `the context holds ${contextSize} characters of text; at most ${MAX_CONTEXT_CHARS} may be sent with one message (remove a chip, or select less)`);
      }
      const attachments = chatAttachments(command.attachments, session, ctx);
      release(); // Checked again (were it ever): one hold, not two.
      release = ctx.store.attachments.holds.hold(attachments.map((a) => a.attachment_id));
      return attachments;
    };
    try {
      return await ctx.turns.run({ session, requestId: command.id, message: { kind: 'chat', command, check } });
    } finally {
      release();
    }
  },

  async retry_turn(command, session, ctx) {
    return ctx.turns.run({ session, requestId: command.id, message: { kind: 'retry', command } });
  },

  async remove_queued(command, session, ctx) {
    ctx.agent.requireConversation(command.conversation_id, session.source);
    // The owner any waiting message; a password user or a webhook account only its own (another
    // person's message, even one of the same credential kind, is not theirs to take back).
    const sentBy = isOwner(session) ? undefined : personOf(session);
    return { removed: ctx.activity.remove(command.conversation_id, command.client_message_id, sentBy) };
  },

  async cancel(command, session, ctx) {
    if (command.conversation_id !== undefined) {
      // Any client that may see the conversation stops its running turn, whoever started it (a webhook account only its own).
      ctx.agent.requireConversation(command.conversation_id, session.source);
      return { cancelled: ctx.turns.cancelConversation(command.conversation_id) };
    }
    if (command.id === undefined) throw new ServiceError('invalid_request', 'cancel needs the id of the chat to cancel, or a conversation_id');
    return { cancelled: ctx.turns.cancel(session.id, command.id) };
  },

  async follow_conversation(command, session, ctx) {
    ctx.agent.requireConversation(command.conversation_id, session.source);
    const { seq, reset } = ctx.events.feeds.follow(session, command.conversation_id, command.after_seq);
    return { conversation_id: command.conversation_id, seq, reset };
  },

  async unfollow_conversation(command, session, ctx) {
    ctx.agent.requireConversation(command.conversation_id, session.source);
    ctx.events.feeds.unfollow(session, command.conversation_id);
    return { following: false as const };
  },

  get_config(_command, session, ctx) {
    // The configuration read once the files are known: a change seen by then is in the answer.
    return ctx.agent.rootInstructionFiles().then((files) => configAnswerFor(ctx.config.current, session.source, files));
  },

  async update_config(command, session, ctx) {
    requireWritableBy(session, command.config);
    const updated_fields = await ctx.config.update(command.config, actorOf(session, ctx.store.devices));
    // The change's audit entries (written by the service's config listener) are durable before the answer.
    await ctx.store.audit.settled();
    return { updated_fields };
  },

  async list_conversations(command, session, ctx) {
    // A webhook account lists only its own conversations; the user's clients list them all.
    const source = ownConversationsSource(session);
    const conversations: Conversation[] = ctx.store.conversations.list({ limit: command.limit, before: command.before, source }).map((row) => conversationOf(row, ctx.activity, ctx.store));
    await readDurable(ctx.store);
    return { conversations };
  },

  async get_messages(command, session, ctx) {
    ctx.agent.requireConversation(command.conversation_id, session.source);
    const rows = await ctx.store.messages.recent(command.conversation_id, { limit: command.limit, includeTools: command.include_tools });
    const messages: Message[] = await clientMessagesOf(rows, ctx.store.usage);
    // Why the last user message has no reply (its turn failed or was stopped), when the stored reason is that message's.
    const why = ctx.store.conversations.unansweredOf(command.conversation_id);
    const unanswered = why !== undefined && why.message_id === lastUnanswered(messages)?.id ? why : undefined;
    await readDurable(ctx.store);
    return unanswered ? { messages, unanswered } : { messages };
  },

  async get_plan(command, session, ctx) {
    ctx.agent.requireConversation(command.conversation_id, session.source);
    const plan = ctx.store.conversations.planOf(command.conversation_id) ?? [];
    await readDurable(ctx.store);
    return { plan };
  },

  async delete_conversation(command, session, ctx) {
    ctx.agent.requireConversation(command.conversation_id, session.source);
    await requireDeleteConfirmed(command.conversation_id, command.confirm, ctx);
    // A turn running there is stopped first (its model and tools too) and ends as stopped: it neither stores
    // a reply into the deleted conversation (an internal error) nor is run again by a resend (review28a).
    await ctx.turns.stopConversation(command.conversation_id);
    const source = ctx.store.conversations.sourceOf(command.conversation_id);
    if (source !== undefined && (await ctx.store.conversations.delete(command.conversation_id))) conversationGone(ctx, { id: command.conversation_id, source }, 'user');
    return { deleted: true };
  },

  async list_tools(_command, _session, ctx) {
    return { tools: (await ctx.tools.list()).map(toolInfo) };
  },

  async permission_response(command, session, ctx) {
    if (!session.canAnswerPermissions) throw new ServiceError('unauthorized', 'this client cannot answer permission requests');
    return ctx.permissions.answer(
      command.request_id,
      { decision: command.decision, note: command.note },
      { owner: isOwner(session), label: sessionLabel(session, ctx.store.devices), actor: actorOf(session, ctx.store.devices) },
    );
  },

  async list_pending_permissions(_command, session, ctx) {
    return { requests: ctx.permissions.pendingFor(session) };
  },

  async list_deliveries(command, _session, ctx) {
    const deliveries = ctx.deliveries.list({ account: command.account, status: command.status, limit: command.limit });
    await readDurable(ctx.store);
    return { deliveries };
  },

  async retry_delivery(command, _session, ctx) {
    return { delivery: await ctx.deliveries.retry(command.delivery_id) };
  },

  create_pairing: createPairing,
  relay_status: relayStatus,
  create_lan_pairing: createLanPairing,
  list_devices: listDevices,
  revoke_device: revokeDevice,
  undo_turn: undoTurn,
  async compact_conversation(command, session, ctx) {
    // The summary reaches the conversation's followers as a chat.message, as a turn's messages do.
    const origin = { sessionId: session.id, requestId: command.id };
    // As after a turn (TurnRunner), the followers (its sender among them) have the summary before the answer.
    return ctx.agent
      .compact(command.conversation_id, session.source, command.focus, (event) => ctx.events.feeds.publish(event, { origin }))
      .finally(() => ctx.events.feeds.flush(command.conversation_id));
  },
  list_turn_changes: listTurnChanges,
  ...pushHandlers,
  get_usage: getUsage,
  ...historyHandlers,
  ...attachmentHandlers,
  list_audit: listAudit,
  verify_audit: verifyAudit,
  ...agentContextHandlers,
  ...reviewHandlers,
};
