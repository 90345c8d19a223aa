import * as z from 'zod';
import { ChatContext } from './chat-context-schema';
import { ClientMessageId, clientId, command, nonEmpty } from './command-frame';
import { RequestId, Seq } from './envelope';
import { AttachmentId, AttachmentInfo, MAX_ATTACHMENTS_PER_MESSAGE } from './attachments';
import { Message } from './conversations';
import { ToolResultDetail } from './tool-results';
import { lazySchema } from './lazy-schema';

/**
 * Chatting (docs/protocol.md, "chat", "Following a conversation"): a message and its turn, cancelling,
 * the queue behind a running turn, following a conversation's live events, and those events.
 */

export { MAX_CLIENT_MESSAGE_ID_CHARS } from './command-frame';

export const ChatCommand = lazySchema(() =>
  command('chat', {
    /** May be empty when the chat carries attachments. */
    message: z.string({ error: 'message must be a string' }),
    conversation_id: nonEmpty('conversation_id').optional(),
    stream: z.boolean().optional().default(false),
    /**
     * Made by the client (a UUID): a resend under the same id by the same principal is answered with the
     * original result, never stored or run twice (docs/protocol.md, "Resending a chat").
     */
    client_message_id: ClientMessageId.optional(),
    /** What the editor's chips show (a selection, a file): put before the message in the prompt, stored with it. */
    context: ChatContext.optional(),
    /** Uploaded attachments (attachment_end's ids), in order: images for a vision model, files saved into the workspace. */
    attachments: z
      .array(AttachmentId)
      .max(MAX_ATTACHMENTS_PER_MESSAGE, { error: `at most ${MAX_ATTACHMENTS_PER_MESSAGE} attachments a message` })
      .optional(),
    /**
     * A new conversation works in its own git worktree (true) or in the workspace (false); absent:
     * service.json's `worktrees.default` for the source. On an existing conversation: absent, or what it has.
     */
    worktree: z.boolean({ error: 'worktree must be true or false' }).optional(),
  }).superRefine((chat, ctx) => {
    if (chat.message.length === 0 && !chat.attachments?.length) ctx.addIssue({ code: 'custom', path: ['message'], message: 'message must not be empty' });
  }),
);

/**
 * Answers the conversation's last user message again, when its turn failed or was cancelled (no reply
 * after it) and no turn runs there: nothing new is stored before the model answers (docs/protocol.md,
 * "Retrying a turn").
 */
export const RetryTurnCommand = lazySchema(() =>
  command('retry_turn', {
    conversation_id: nonEmpty('conversation_id'),
    message_id: nonEmpty('message_id'),
    stream: z.boolean().optional().default(false),
    /** Made by the client (a UUID) for this retry: a resend under it by the same person gets the first one's result, never a second run. */
    client_retry_id: clientId('client_retry_id').optional(),
  }),
);

/** Takes a message waiting behind a running turn out of the queue before it starts (its chat is answered `cancelled`). */
export const RemoveQueuedCommand = lazySchema(() =>
  command('remove_queued', {
    conversation_id: nonEmpty('conversation_id'),
    client_message_id: ClientMessageId,
  }),
);

/**
 * Cancels the running chat whose request id is `id` (the sender's own), or, with `conversation_id`, the
 * running turn of that conversation whoever started it (docs/protocol.md, "Following a conversation").
 */
export const CancelCommand = lazySchema(() => command('cancel', { conversation_id: nonEmpty('conversation_id').optional() }));

/**
 * Starts sending the conversation's live events to this client. `after_seq`: the last `seq` the client
 * saw; what came after it is sent first (or `reset` says to reload the transcript).
 */
export const FollowConversationCommand = lazySchema(() =>
  command('follow_conversation', {
    conversation_id: nonEmpty('conversation_id'),
    after_seq: z.number({ error: 'expected an integer' }).int({ error: 'expected an integer' }).min(0, { error: 'must be at least 0' }).optional(),
  }),
);
export const UnfollowConversationCommand = lazySchema(() => command('unfollow_conversation', { conversation_id: nonEmpty('conversation_id') }));

export const ChatResult = lazySchema(() =>
  z.object({
    response: z.string(),
    conversation_id: z.string(),
    /** Present (true) when the chat was cancelled; `response` is then what had been streamed. */
    cancelled: z.literal(true).optional(),
    /**
     * Present (true) on a resend after a restart cut its turn short: the message is stored, its reply was
     * never made, and it is not run again (docs/protocol.md, "Resending a chat").
     */
    interrupted: z.literal(true).optional(),
  }),
);

export const ChatResults = lazySchema(() => ({
  chat: ChatResult,
  /** A retried turn answers as a chat does. */
  retry_turn: ChatResult,
  /** A comment on a change (worktrees.ts) is a chat message of its conversation: the same answer. */
  comment_on_change: ChatResult,
  cancel: z.object({ cancelled: z.boolean() }),
  /** False when no message of that id waits in that conversation (it started, was removed, or never queued). */
  remove_queued: z.object({ removed: z.boolean() }),
  follow_conversation: z.object({
    conversation_id: z.string(),
    /** The conversation's last event number when the follow took effect (after the replay). */
    seq: z.number().int(),
    /** `after_seq` could not be replayed from (too old, or from before a restart): reload the transcript. */
    reset: z.boolean(),
  }),
  unfollow_conversation: z.object({ following: z.literal(false) }),
}));

// ---- Events: pushed unsolicited to authenticated sockets; they carry `event`, never `status` ----

export const ChatDeltaEvent = lazySchema(() =>
  z.object({
    event: z.literal('chat.delta'),
    seq: Seq,
    id: RequestId.optional(),
    conversation_id: z.string(),
    delta: z.string(),
  }),
);
export const ToolCallEvent = lazySchema(() =>
  z.object({
    event: z.literal('tool.call'),
    seq: Seq,
    id: RequestId.optional(),
    conversation_id: z.string(),
    tool: z.string(),
    /** The call's id (the stored tool messages carry it too, so a client can tell a call it already shows). */
    call_id: z.string().optional(),
    arguments: z.record(z.string(), z.unknown()),
  }),
);
export const ToolResultEvent = lazySchema(() =>
  z.object({
    event: z.literal('tool.result'),
    seq: Seq,
    id: RequestId.optional(),
    conversation_id: z.string(),
    tool: z.string(),
    /** The id of the call this result answers. */
    call_id: z.string().optional(),
    ok: z.boolean(),
    /** The tool did not run: the permission gate refused it (a rule, the mode, the user or the source). */
    denied: z.boolean(),
    /** The tool's output as stored (what the model reads; a denial's reason); absent from older services. */
    content: z.string().optional(),
    /** What the call did, for people: the applied diff, a command's exit code (see Message's `detail`). */
    detail: ToolResultDetail.optional(),
    /** An image the tool read or made, shown to the user (read it with get_attachment). */
    attachments: z.array(AttachmentInfo).optional(),
  }),
);
/** A message of the conversation was stored (the user's, starting a turn, or the reply): to its followers. */
export const ChatMessageEvent = lazySchema(() =>
  z.object({
    event: z.literal('chat.message'),
    seq: Seq,
    /** The sender's request id, on the sender's own copy (as on the turn's other events). */
    id: RequestId.optional(),
    conversation_id: z.string(),
    /** A user message sent with a client_message_id carries it (`message.client_message_id`). */
    message: Message,
  }),
);
/** What went wrong with the model provider (agent/providers/types.ts ProviderErrorKind), for a client to word. */
export const ProviderFailureReason = lazySchema(() => z.enum(['auth', 'bad_request', 'not_configured', 'rate_limited', 'timeout', 'unavailable', 'network', 'bad_response']));
export type ProviderFailureReason = z.infer<typeof ProviderFailureReason>;

/**
 * A turn of a conversation ended, whoever started it (a chat of any client, a webhook message):
 * `error` is a short readable reason for a failure (the kind of failure and an HTTP status: no secret,
 * no provider text, no stack); `reason` and `provider` say it for a client to word (a provider's failure only).
 */
export const TurnEndedEvent = lazySchema(() =>
  z.object({
    event: z.literal('turn.ended'),
    seq: Seq,
    conversation_id: z.string(),
    /** Where the turn came from: `editor`, `ws`, `relay` or `webhook:<account>`. */
    source: z.string(),
    outcome: z.enum(['answered', 'failed', 'cancelled']),
    /** The user message the turn answered (a retried turn's too); absent when the turn stored none. */
    message_id: z.string().optional(),
    error: z.string().optional(),
    reason: ProviderFailureReason.optional(),
    /** The provider that failed (`openai`, `anthropic`...). */
    provider: z.string().optional(),
    /** Answered: the instruction files in force after it, as list_instructions' `fingerprint` (a page shows them again only when it differs). */
    instructions: z.string().optional(),
    /** Answered: how many file writes it made (0: no Undo to offer, list_turn_changes has nothing new); absent when unknown (a retry). */
    files_written: z.number().int().optional(),
  }),
);
export type TurnEndedEvent = z.infer<typeof TurnEndedEvent>;

/**
 * Why the conversation's last user message has no reply: its last turn failed or was stopped (get_messages'
 * `unanswered`, so a page drawn afresh after a reload says which, as `turn.ended` said it live). The same
 * fields as that `turn.ended`'s.
 */
export const UnansweredTurn = lazySchema(() =>
  z.object({
    message_id: z.string(),
    outcome: z.enum(['failed', 'cancelled']),
    error: z.string().optional(),
    reason: ProviderFailureReason.optional(),
    provider: z.string().optional(),
  }),
);
export type UnansweredTurn = z.infer<typeof UnansweredTurn>;

/**
 * The model provider failed in a way that may pass (rate limited, overloaded, the network) and the
 * service asks it again after `retry_in_ms` (its Retry-After, or a backoff): the turn goes on meanwhile.
 */
export const TurnRetryingEvent = lazySchema(() =>
  z.object({
    event: z.literal('turn.retrying'),
    seq: Seq,
    id: RequestId.optional(),
    conversation_id: z.string(),
    reason: ProviderFailureReason,
    /** The provider's HTTP status, when it answered. */
    status: z.number().int().optional(),
    retry_in_ms: z.number().int().nonnegative(),
  }),
);
export type TurnRetryingEvent = z.infer<typeof TurnRetryingEvent>;
