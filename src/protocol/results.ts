import { z } from 'zod';
import { Conversation, Delivery, ExportFormat, Message, SearchHit, PairedDevice, PermissionDecision, PublicConfig, PushDevice, PushTestResult, ToolInfo, type CommandType } from './commands';
import type { ErrorEnvelope, RequestId } from './envelope';
import { PairingInfo, RelayLinkStatus } from './relay';
import { PermissionRequest } from './events';
import { UsageDay } from './usage';
import { Plan } from './plan';
import { TurnChanges, UndoTurnResult } from './undo';
import { AttachmentResults } from './attachments';
import { AuditResults } from './audit';
import { WorktreeResults } from './worktrees';
import { InstructionFileInfo, SavedPrompt } from './agent-context';

/**
 * What each command answers: the `data` of its ok envelope (docs/protocol.md, "Commands"). One schema
 * per command, keyed by its type, so the handlers' return types, the clients' reads and this table
 * cannot drift apart (the HandlerMap type and test/service/protocol-results.test.ts hold them together).
 */
export const ChatResult = z.object({
  response: z.string(),
  conversation_id: z.string(),
  /** Present (true) when the chat was cancelled; `response` is then what had been streamed. */
  cancelled: z.literal(true).optional(),
  /**
   * Present (true) on a resend after a restart cut its turn short: the message is stored, its reply was
   * never made, and it is not run again (docs/protocol.md, "Resending a chat").
   */
  interrupted: z.literal(true).optional(),
});

export const CommandResults = {
  // The session answers `auth` itself (the first frame); dispatched later, it is always refused.
  auth: z.object({
    authenticated: z.literal(true),
    /** Seconds the session token has left; null for the access token. */
    expires_in: z.number().int().nullable(),
    /** The service's PROTOCOL_VERSION and its build (package version). */
    protocol: z.number().int(),
    server_build: z.string(),
    /** Present when the client's `protocol` differs: which side must be updated (protocol/version.ts). */
    update: z.enum(['client', 'service']).optional(),
    /** After `pairing_secret`: this device's id and its own token (keep it; send it as `token` from now on). */
    device_id: z.string().optional(),
    device_token: z.string().optional(),
  }),
  chat: ChatResult,
  get_config: PublicConfig,
  update_config: z.object({ updated_fields: z.array(z.string()) }),
  list_conversations: z.object({ conversations: z.array(Conversation) }),
  get_messages: z.object({ messages: z.array(Message) }),
  get_plan: z.object({ plan: Plan }),
  list_tools: z.object({ tools: z.array(ToolInfo) }),
  list_instructions: z.object({ files: z.array(InstructionFileInfo) }),
  list_prompts: z.object({ prompts: z.array(SavedPrompt) }),
  delete_conversation: z.object({ deleted: z.literal(true) }),
  permission_response: z.object({
    request_id: z.string(),
    /** The decision in force: this answer's, or (already_decided) the same one given before. */
    decision: PermissionDecision,
    /** Who decided, as people read it (protocol/sources.ts `sourceLabel`). */
    decided_by: z.string(),
    /** This answer came after the same decision was made: nothing changed. */
    already_decided: z.boolean(),
    rule_added: z.string().optional(),
  }),
  list_pending_permissions: z.object({ requests: z.array(PermissionRequest) }),
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
  list_deliveries: z.object({ deliveries: z.array(Delivery) }),
  retry_delivery: z.object({ delivery: Delivery }),
  create_pairing: PairingInfo,
  relay_status: z.object({ relays: z.array(RelayLinkStatus) }),
  create_lan_pairing: z.object({ pairing_secret: z.string(), expires_in: z.number().int(), link: z.string() }),
  list_devices: z.object({ devices: z.array(PairedDevice) }),
  revoke_device: z.object({ revoked: z.boolean() }),
  push_info: z.object({ vapid_public_key: z.string() }),
  push_subscribe: z.object({ device: PushDevice }),
  push_settings: z.object({ device: PushDevice }),
  push_unsubscribe: z.object({ removed: z.boolean() }),
  list_push_devices: z.object({ devices: z.array(PushDevice) }),
  push_test: z.object({ results: z.array(PushTestResult) }),
  undo_turn: UndoTurnResult,
  list_turn_changes: z.object({ turns: z.array(TurnChanges) }),
  /** The stored summary, and how full the window is now (an estimate of the next request). */
  compact_conversation: z.object({ message: Message, context_used: z.number().int(), context_window: z.number().int() }),
  /** The state in force for this session: the device it names (null: none named yet) and whether its page is visible. */
  client_state: z.object({ device_id: z.string().nullable(), visible: z.boolean() }),
  /** Days with usage, newest first (days without any are left out). */
  get_usage: z.object({ days: z.array(UsageDay) }),
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
  backup: z.object({
    path: z.string(),
    /** The files written, relative to `path`. */
    files: z.array(z.string()),
  }),
  ...AttachmentResults,
  ...AuditResults,
  ...WorktreeResults,
  /** The comment is a chat message of the conversation: the same answer. */
  comment_on_change: ChatResult,
} satisfies { [T in CommandType]: z.ZodType };

export type CommandResults = typeof CommandResults;
/** The `data` a command of type `T` answers with. */
export type ResultOf<T extends CommandType> = z.infer<CommandResults[T]>;

/** The ok envelope answering a command of type `T`. */
export interface OkEnvelopeOf<T extends CommandType> {
  status: 'ok';
  data: ResultOf<T>;
  id?: RequestId;
}
/** Any envelope answering a command of type `T`: its result or an error. */
export type EnvelopeOf<T extends CommandType> = OkEnvelopeOf<T> | ErrorEnvelope;
