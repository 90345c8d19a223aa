import * as z from 'zod';
import { ChatContext } from './chat-context-schema';
import { command, listLimit, nonEmpty } from './command-frame';
import { AttachmentInfo } from './attachments';
import { ConversationUsage, MessageUsage } from './usage';
import { PlanSummary } from './plan';
import { ToolResultDetail } from './tool-results';
import { WorktreeInfo } from './worktrees';
import { lazySchema } from './lazy-schema';
import { UnansweredTurn } from './chat';

/**
 * Conversations and their history (docs/protocol.md, "Commands", "Search and export", "Context window
 * and compaction"): listing, reading, deleting, searching, exporting and compacting them, the shapes of a
 * conversation and a stored message, and `conversation.updated`.
 */

export const ListConversationsCommand = lazySchema(() =>
  command('list_conversations', {
    limit: listLimit,
    before: z.string().optional(),
  }),
);

export const GetMessagesCommand = lazySchema(() =>
  command('get_messages', {
    conversation_id: nonEmpty('conversation_id'),
    limit: listLimit,
    include_tools: z.boolean().optional().default(false),
  }),
);

export const DeleteConversationCommand = lazySchema(() =>
  command('delete_conversation', {
    conversation_id: nonEmpty('conversation_id'),
    /** Needed when the conversation's worktree holds work not landed (else `conflict`, saying what). */
    confirm: z.boolean({ error: 'confirm must be a boolean' }).optional().default(false),
  }),
);

// ---- Search and export (docs/protocol.md, "Search and export") ----
/** Most hits `search_messages` answers; larger limits are clamped. */
export const MAX_SEARCH_LIMIT = 100;
export const MAX_SEARCH_QUERY_CHARS = 500;

/** Messages matching every word of `query` (the last word as a prefix), newest first. */
export const SearchMessagesCommand = lazySchema(() =>
  command('search_messages', {
    query: nonEmpty('query').max(MAX_SEARCH_QUERY_CHARS, { error: `query must be at most ${MAX_SEARCH_QUERY_CHARS} characters` }),
    conversation_id: nonEmpty('conversation_id').optional(),
    limit: z
      .number({ error: 'expected an integer' })
      .int({ error: 'expected an integer' })
      .min(1, { error: 'must be at least 1' })
      .transform((n) => Math.min(n, MAX_SEARCH_LIMIT))
      .default(20),
  }),
);

export const ExportFormat = lazySchema(() => z.enum(['markdown', 'json']));
export type ExportFormat = z.infer<typeof ExportFormat>;

/**
 * A whole conversation as a file, in pieces so that no frame comes near the 1 MiB limit: the first call
 * (no `offset`) fixes what is exported (`until`); the client asks for `next_offset` with that `until`
 * until `next_offset` is null.
 */
export const ExportConversationCommand = lazySchema(() =>
  command('export_conversation', {
    conversation_id: nonEmpty('conversation_id'),
    format: ExportFormat,
    offset: z.number({ error: 'expected an integer' }).int({ error: 'expected an integer' }).min(0, { error: 'must be at least 0' }).optional(),
    until: nonEmpty('until').optional(),
  }),
);

/** Summarise a conversation's older turns now (docs/protocol.md, "Context window and compaction"). */
export const CompactConversationCommand = lazySchema(() =>
  command('compact_conversation', {
    conversation_id: nonEmpty('conversation_id'),
    /** What the summary must keep in particular ("keep the API design"). */
    focus: z.string({ error: 'focus must be a string' }).trim().min(1, { error: 'focus must not be empty' }).max(2_000, { error: 'focus must be at most 2000 characters' }).optional(),
  }),
);

// ---- Shapes ----

/** `running`: a turn of it is queued or in progress; `waiting`: a permission request of it waits for a person. */
export const ConversationState = lazySchema(() => z.enum(['idle', 'running', 'waiting']));
export type ConversationState = z.infer<typeof ConversationState>;

/** Longest `last_message` and queued `preview`: the first line of a message, cut there. */
export const PREVIEW_CHARS = 120;

/** A message sent while a turn of its conversation runs: it waits, and can be removed (remove_queued) until it starts. */
export const QueuedMessage = lazySchema(() =>
  z.object({
    /** Null when its chat carried no client_message_id (it cannot be removed then). */
    client_message_id: z.string().nullable(),
    preview: z.string(),
  }),
);
export type QueuedMessage = z.infer<typeof QueuedMessage>;

/**
 * Most chats one person may have waiting behind running turns, all conversations together (docs/protocol.md,
 * "Queued messages"): each is held in memory until its turn, so a script or a device sending on and on must
 * meet a bound; a person typing while a turn runs stays far below it.
 */
export const MAX_QUEUED_MESSAGES_PER_PERSON = 32;
/**
 * Most characters (message text and context text together) one person's waiting chats may hold: four
 * messages the size of a full frame, more than a model's context takes in one turn.
 */
export const MAX_QUEUED_CHARS_PER_PERSON = 4 * 1024 * 1024;

export const Conversation = lazySchema(() =>
  z.object({
    id: z.string(),
    title: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    source: z.string(),
    /** Who started it, as people read it (a paired device's name, a password user's, `editor`); null for a webhook's or one from before this was kept; absent from older services. */
    started_by: z.string().nullable().optional(),
    state: ConversationState,
    /** Permission requests of it waiting now. */
    pending_permissions: z.number().int(),
    /** The first line of its last user or assistant message (at most PREVIEW_CHARS), null when it has none. */
    last_message: z.string().nullable(),
    /** Messages waiting behind its running turn, in the order they will run. */
    queued: z.array(QueuedMessage),
    /** Its replies' usage summed, and how full the context window was on its last call; absent from older services, null before any reply. */
    usage: ConversationUsage.nullable().optional(),
    /** Its plan collapsed ("3 of 7 done"); absent when the model wrote none (or from older services). */
    plan_summary: PlanSummary.optional(),
    /** Its own git worktree (docs/protocol.md, "Worktrees"), null when it works in the workspace; absent from older services. */
    worktree: WorktreeInfo.nullable().optional(),
  }),
);
export type Conversation = z.infer<typeof Conversation>;

/** `summary`: earlier turns summarised for the model (or the notice that they could not be); see `compaction`. */
export const MessageRole = lazySchema(() => z.enum(['user', 'assistant', 'tool', 'summary']));
export type MessageRole = z.infer<typeof MessageRole>;

export const Message = lazySchema(() =>
  z.object({
    id: z.string(),
    role: MessageRole,
    content: z.string(),
    timestamp: z.string(),
    tool_name: z.string().optional(),
    /** `tool` messages: a call (its arguments as JSON in `content`) or a result. */
    tool_kind: z.enum(['call', 'result']).optional(),
    /** `tool` messages: the call's id, which its result and the live `tool.call` / `tool.result` events carry too. */
    call_id: z.string().optional(),
    /** Tool results: whether the tool ran and succeeded (false when it failed or was denied). */
    ok: z.boolean().optional(),
    /** Tool results: the tool did not run, the permission gate refused it (as `tool.result` says live). */
    denied: z.boolean().optional(),
    /** Tool results: what the call did, for people (the applied diff of write_file/edit_file, run_command's exit code). */
    detail: ToolResultDetail.optional(),
    /** Replies: the tokens and cost of the turn's provider calls (absent when none were counted). */
    usage: MessageUsage.optional(),
    /** User messages: who sent it, as people read it (a paired device's name, a password user's, `editor`, `LAN`); absent on older messages. */
    from: z.string().optional(),
    /** User messages: the context sent with it (chat's `context`), for the history's chips. */
    context: ChatContext.optional(),
    /** User messages: the files attached to it (read them with get_attachment). */
    attachments: z.array(AttachmentInfo).optional(),
    /**
     * `summary` messages: `summarised`, the model is sent this text instead of the `messages` stored before
     * it (they stay in the history); `failed`, no summary could be made (`content` says why) and the
     * oldest turns are cut from what the model is sent.
     */
    compaction: z.object({ status: z.enum(['summarised', 'failed']), messages: z.number().int().optional(), focus: z.string().optional() }).optional(),
    /**
     * User messages sent with a client_message_id (chat's): that id, so its sender knows its own message
     * among identical ones (live in `chat.message`, and in the history after a reload).
     */
    client_message_id: z.string().optional(),
  }),
);
export type Message = z.infer<typeof Message>;

/** A message matching a search_messages query. */
export const SearchHit = lazySchema(() =>
  z.object({
    message_id: z.string(),
    conversation_id: z.string(),
    conversation_title: z.string(),
    role: MessageRole,
    timestamp: z.string(),
    /** The message around its first match, whitespace collapsed, `…` where cut. */
    snippet: z.string(),
    /** The matched words in `snippet`: [start, end) offsets in UTF-16 code units (JavaScript string indexes). */
    highlights: z.array(z.tuple([z.number().int(), z.number().int()])),
  }),
);
export type SearchHit = z.infer<typeof SearchHit>;

export const ConversationResults = lazySchema(() => ({
  list_conversations: z.object({ conversations: z.array(Conversation) }),
  get_messages: z.object({ messages: z.array(Message), unanswered: UnansweredTurn.optional() }),
  delete_conversation: z.object({ deleted: z.literal(true) }),
  search_messages: z.object({ hits: z.array(SearchHit) }),
  export_conversation: z.object({
    conversation_id: z.string(),
    format: ExportFormat,
    /** A name for the file (from the title), with its extension. */
    file_name: z.string(),
    mime_type: z.string(),
    /** This piece of the file's text, from `offset`. */
    text: z.string(),
    offset: z.number().int(),
    /** Where the next piece starts; null when this was the last. */
    next_offset: z.number().int().nullable(),
    /** The file's length in characters. */
    total_chars: z.number().int(),
    /** Send it back with `next_offset`: the pieces are of the same export. */
    until: z.string(),
  }),
  /** The stored summary, and how full the window is now (an estimate of the next request). */
  compact_conversation: z.object({ message: Message, context_used: z.number().int(), context_window: z.number().int() }),
}));

// ---- Events ----
/**
 * A conversation was deleted, by a person (`delete_conversation`, from any client) or by the history's
 * retention (older, or over the size, than service.json keeps): every client that may see it drops it from
 * its list, and one showing it says so, so no client lists a conversation that is gone (s31).
 */
export const ConversationDeletedEvent = lazySchema(() =>
  z.object({
    event: z.literal('conversation.deleted'),
    conversation_id: z.string(),
    by: z.enum(['user', 'retention']),
  }),
);

export const ConversationUpdatedEvent = lazySchema(() =>
  z.object({
    event: z.literal('conversation.updated'),
    conversation_id: z.string(),
    source: z.string(),
    /** The conversation's row as list_conversations gives it, so no client has to list again. */
    conversation: Conversation,
  }),
);
