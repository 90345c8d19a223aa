import { z } from 'zod';
import { ChatContext } from './chat-context-schema';
import { InstructionFileInfo, SystemPromptMode } from './agent-context';
import { displayName, displayNameField } from './display-name';
import { RequestId } from './envelope';
import { command } from './command-frame';
import { ListAuditCommand, VerifyAuditCommand } from './audit';
import { ConversationUsage, MAX_USAGE_DAYS, MessageUsage } from './usage';
import { PlanSummary } from './plan';
import { WorktreeCommands } from './worktrees';
import { AttachmentBeginCommand, AttachmentChunkCommand, AttachmentEndCommand, AttachmentId, AttachmentInfo, GetAttachmentCommand, MAX_ATTACHMENTS_PER_MESSAGE } from './attachments';

/** Maximum `limit` of list commands; larger values are clamped (docs/protocol.md). */
export const MAX_LIST_LIMIT = 500;
export const DEFAULT_LIST_LIMIT = 50;

const listLimit = z
  .number({ error: 'expected an integer' })
  .int({ error: 'expected an integer' })
  .min(1, { error: 'must be at least 1' })
  .transform((n) => Math.min(n, MAX_LIST_LIMIT))
  .default(DEFAULT_LIST_LIMIT);

const nonEmpty = (what: string) => z.string({ error: `${what} must be a string` }).min(1, { error: `${what} must not be empty` });

export const AuthCommand = command('auth', {
  /** The access token, a session token, or a paired device's `device_token`. */
  token: z.string({ error: 'token must be a string' }).optional(),
  /** Instead of a token: a one-time pairing secret, spent for this device's own credential (docs/protocol.md, "Devices"). */
  pairing_secret: z.string({ error: 'pairing_secret must be a string' }).min(1).max(256).optional(),
  /** With `pairing_secret`: the page's own device id (its Web Push id) and a name for the list of devices. */
  device_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'device_id must be 1 to 64 letters, digits, - or _' }).optional(),
  device_name: z.string({ error: 'device_name must be a string' }).max(100, { error: 'device_name must be at most 100 characters' }).transform(displayName).optional(),
  /** The client's PROTOCOL_VERSION (protocol/version.ts): the reply says which side must update when they differ. */
  protocol: z.number({ error: 'protocol must be an integer' }).int({ error: 'protocol must be an integer' }).optional(),
});

/** Longest `client_message_id` (a UUID is 36). */
export const MAX_CLIENT_MESSAGE_ID_CHARS = 128;

export const ChatCommand = command('chat', {
  /** May be empty when the chat carries attachments. */
  message: z.string({ error: 'message must be a string' }),
  conversation_id: nonEmpty('conversation_id').optional(),
  stream: z.boolean().optional().default(false),
  /**
   * Made by the client (a UUID): a resend under the same id by the same principal is answered with the
   * original result, never stored or run twice (docs/protocol.md, "Resending a chat").
   */
  client_message_id: nonEmpty('client_message_id')
    .max(MAX_CLIENT_MESSAGE_ID_CHARS, { error: `client_message_id must be at most ${MAX_CLIENT_MESSAGE_ID_CHARS} characters` })
    .optional(),
  /** What the editor's chips show (a selection, a file): put before the message in the prompt, stored with it. */
  context: ChatContext.optional(),
  /** Uploaded attachments (attachment_end's ids), in order: images for a vision model, files saved into the workspace. */
  attachments: z.array(AttachmentId).max(MAX_ATTACHMENTS_PER_MESSAGE, { error: `at most ${MAX_ATTACHMENTS_PER_MESSAGE} attachments a message` }).optional(),
}).superRefine((chat, ctx) => {
  if (chat.message.length === 0 && !chat.attachments?.length) ctx.addIssue({ code: 'custom', path: ['message'], message: 'message must not be empty' });
});

export const GetConfigCommand = command('get_config', {});

/** Keys that reach or replace an object's prototype when copied: never a setting's name. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Paths (at any depth) of prototype keys in a parsed JSON value. */
function prototypeKeyPaths(value: unknown, path: string[] = []): string[][] {
  if (value === null || typeof value !== 'object') return [];
  return Object.keys(value).flatMap((key) => {
    const here = [...path, key];
    return PROTOTYPE_KEYS.has(key) ? [here] : prototypeKeyPaths((value as Record<string, unknown>)[key], here);
  });
}

export const UpdateConfigCommand = command('update_config', {
  // Checked on the value as received: copying it into a record would turn "__proto__" into its prototype, silently.
  config: z
    .unknown()
    .superRefine((value, ctx) => {
      for (const path of prototypeKeyPaths(value)) ctx.addIssue({ code: 'custom', path, message: 'not a setting (a prototype key)' });
    })
    .pipe(z.record(z.string(), z.unknown(), { error: 'config must be an object' })),
});

export const ListConversationsCommand = command('list_conversations', {
  limit: listLimit,
  before: z.string().optional(),
});

export const GetMessagesCommand = command('get_messages', {
  conversation_id: nonEmpty('conversation_id'),
  limit: listLimit,
  include_tools: z.boolean().optional().default(false),
});

export const ListToolsCommand = command('list_tools', {});

/** The instruction files the model is given; with a conversation, also those above the paths its tools touched. */
export const ListInstructionsCommand = command('list_instructions', { conversation_id: nonEmpty('conversation_id').optional() });

/** The saved prompts of the workspace and the user (docs/protocol.md, "Saved prompts"). */
export const ListPromptsCommand = command('list_prompts', {});

/** Token usage and cost per UTC day (and per model), the last `days` days, today included (docs/protocol.md, "Usage and cost"). */
export const GetUsageCommand = command('get_usage', {
  days: z
    .number({ error: 'days must be an integer' })
    .int({ error: 'days must be an integer' })
    .min(1, { error: 'days must be at least 1' })
    .max(MAX_USAGE_DAYS, { error: `days must be at most ${MAX_USAGE_DAYS}` })
    .default(30),
});

/** The conversation's latest plan (the `todo` tool's checklist); empty when the model wrote none. */
export const GetPlanCommand = command('get_plan', {
  conversation_id: nonEmpty('conversation_id'),
});

export const DeleteConversationCommand = command('delete_conversation', {
  conversation_id: nonEmpty('conversation_id'),
  /** Needed when the conversation's worktree holds work not landed (else `conflict`, saying what). */
  confirm: z.boolean({ error: 'confirm must be a boolean' }).optional().default(false),
});

/** `allow_always` (owner only) also adds the narrowest allow rule for the call (docs/protocol.md, "Permission rules"). */
export const PermissionDecision = z.enum(['allow', 'allow_session', 'allow_always', 'deny']);
export type PermissionDecision = z.infer<typeof PermissionDecision>;

/** Longest `note` a deny may carry (it becomes the tool result the model reads). */
export const MAX_PERMISSION_NOTE_CHARS = 2000;

export const PermissionResponseCommand = command('permission_response', {
  request_id: nonEmpty('request_id'),
  decision: PermissionDecision,
  /** With `deny`: why, for the model (it receives it as the tool result and can change course). */
  note: z.string({ error: 'note must be a string' }).max(MAX_PERMISSION_NOTE_CHARS, { error: `note must be at most ${MAX_PERMISSION_NOTE_CHARS} characters` }).optional(),
});

/** The permission requests waiting now that this client may answer. */
export const ListPendingPermissionsCommand = command('list_pending_permissions', {});

/** Takes a message waiting behind a running turn out of the queue before it starts (its chat is answered `cancelled`). */
export const RemoveQueuedCommand = command('remove_queued', {
  conversation_id: nonEmpty('conversation_id'),
  client_message_id: nonEmpty('client_message_id'),
});

/**
 * Cancels the running chat whose request id is `id` (the sender's own), or, with `conversation_id`, the
 * running turn of that conversation whoever started it (docs/protocol.md, "Following a conversation").
 */
export const CancelCommand = command('cancel', { conversation_id: nonEmpty('conversation_id').optional() });

/**
 * Starts sending the conversation's live events to this client. `after_seq`: the last `seq` the client
 * saw; what came after it is sent first (or `reset` says to reload the transcript).
 */
export const FollowConversationCommand = command('follow_conversation', {
  conversation_id: nonEmpty('conversation_id'),
  after_seq: z.number({ error: 'expected an integer' }).int({ error: 'expected an integer' }).min(0, { error: 'must be at least 0' }).optional(),
});
export const UnfollowConversationCommand = command('unfollow_conversation', { conversation_id: nonEmpty('conversation_id') });

// ---- History: search and export (docs/protocol.md, "Search and export") ----
/** Most hits `search_messages` answers; larger limits are clamped. */
export const MAX_SEARCH_LIMIT = 100;
export const MAX_SEARCH_QUERY_CHARS = 500;

/** Messages matching every word of `query` (the last word as a prefix), newest first. */
export const SearchMessagesCommand = command('search_messages', {
  query: nonEmpty('query').max(MAX_SEARCH_QUERY_CHARS, { error: `query must be at most ${MAX_SEARCH_QUERY_CHARS} characters` }),
  conversation_id: nonEmpty('conversation_id').optional(),
  limit: z
    .number({ error: 'expected an integer' })
    .int({ error: 'expected an integer' })
    .min(1, { error: 'must be at least 1' })
    .transform((n) => Math.min(n, MAX_SEARCH_LIMIT))
    .default(20),
});

export const ExportFormat = z.enum(['markdown', 'json']);
export type ExportFormat = z.infer<typeof ExportFormat>;

/**
 * A whole conversation as a file, in pieces so that no frame comes near the 1 MiB limit: the first call
 * (no `offset`) fixes what is exported (`until`); the client asks for `next_offset` with that `until`
 * until `next_offset` is null.
 */
export const ExportConversationCommand = command('export_conversation', {
  conversation_id: nonEmpty('conversation_id'),
  format: ExportFormat,
  offset: z.number({ error: 'expected an integer' }).int({ error: 'expected an integer' }).min(0, { error: 'must be at least 0' }).optional(),
  until: nonEmpty('until').optional(),
});

/** A consistent copy of the data directory, made by the running service (owner only; the CLI's `backup`). */
export const BackupCommand = command('backup', {
  path: nonEmpty('path'),
});

// ---- Webhook outbox (docs/protocol.md, "Webhook channel") ----
export const DeliveryStatus = z.enum(['pending', 'delivered', 'failed']);
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

/** Outgoing webhook deliveries, newest first. */
export const ListDeliveriesCommand = command('list_deliveries', {
  account: nonEmpty('account').optional(),
  status: DeliveryStatus.optional(),
  limit: listLimit,
});

/** Sends a failed (or still pending) delivery again now, with a fresh retry window. */
export const RetryDeliveryCommand = command('retry_delivery', {
  delivery_id: nonEmpty('delivery_id'),
});

// ---- Relay (docs/relay.md) ----
/** A one-time pairing for a phone through the relay channel named `channel` (default: the first). */
export const CreatePairingCommand = command('create_pairing', {
  channel: nonEmpty('channel').optional(),
});

/** The state of each relay link. */
export const RelayStatusCommand = command('relay_status', {});

/** A one-time pairing secret for a phone on the LAN (the link is `#url=<ws url>&pair=<secret>`). */
export const CreateLanPairingCommand = command('create_lan_pairing', {});

// ---- Devices (docs/protocol.md, "Devices") ----
export const ListDevicesCommand = command('list_devices', {});
export const RevokeDeviceCommand = command('revoke_device', {
  device_id: z.string({ error: 'device_id must be a string' }).regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'device_id must be 1 to 64 letters, digits, - or _' }),
});

// ---- Web Push (docs/protocol.md, "Web Push") ----
/** A phone page install: random, made by the page (a UUID), kept in its localStorage. */
const DeviceId = z.string({ error: 'device_id must be a string' }).regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'device_id must be 1 to 64 letters, digits, - or _' });
const DeviceName = displayNameField('device_name', 100);

/** Which notifications a device wants; each on unless set off. */
export const PushEventToggles = z.object({
  prompt: z.boolean().default(true),
  finished: z.boolean().default(true),
  failed: z.boolean().default(true),
  webhook: z.boolean().default(true),
});
export type PushEventToggles = z.infer<typeof PushEventToggles>;

/** A browser's PushSubscription (toJSON()); its keys are checked by the service (a P-256 point, 16 bytes). */
export const PushSubscriptionInput = z.object(
  {
    endpoint: z.string({ error: 'endpoint must be a string' }).max(2048, { error: 'endpoint must be at most 2048 characters' }),
    keys: z.object(
      {
        p256dh: z.string({ error: 'p256dh must be a string' }).max(200, { error: 'p256dh is too long' }),
        auth: z.string({ error: 'auth must be a string' }).max(100, { error: 'auth is too long' }),
      },
      { error: 'keys must be an object with p256dh and auth' },
    ),
  },
  { error: 'subscription must be an object with endpoint and keys' },
);
export type PushSubscriptionInput = z.infer<typeof PushSubscriptionInput>;

/** The service's VAPID public key (the page's applicationServerKey). */
export const PushInfoCommand = command('push_info', {});

/** Registers (or replaces) a device's push subscription. */
export const PushSubscribeCommand = command('push_subscribe', {
  device_id: DeviceId,
  device_name: DeviceName,
  subscription: PushSubscriptionInput,
  events: PushEventToggles.optional(),
  content_blind: z.boolean().optional(),
});

/** Changes a device's name or what it is told; fields left out stay. */
export const PushSettingsCommand = command('push_settings', {
  device_id: DeviceId,
  device_name: DeviceName.optional(),
  events: PushEventToggles.partial().optional(),
  content_blind: z.boolean().optional(),
});

export const PushUnsubscribeCommand = command('push_unsubscribe', { device_id: DeviceId });

export const ListPushDevicesCommand = command('list_push_devices', {});

/** A test notification to one device, or to every device. */
export const PushTestCommand = command('push_test', { device_id: DeviceId.optional() });

/** The page tells whether it is visible in the foreground: no push goes to a device while it is. */
export const ClientStateCommand = command('client_state', {
  device_id: DeviceId.optional(),
  visible: z.boolean({ error: 'visible must be a boolean' }),
});

/** Undo a turn: a preview of what it would restore, or with `confirm` the restore (docs/protocol.md, "Undoing a turn"). */
export const UndoTurnCommand = command('undo_turn', {
  conversation_id: nonEmpty('conversation_id'),
  /** The turn's user message, its reply, or any message of the turn. */
  message_id: nonEmpty('message_id'),
  confirm: z.boolean({ error: 'confirm must be a boolean' }).optional().default(false),
});
export const ListTurnChangesCommand = command('list_turn_changes', { conversation_id: nonEmpty('conversation_id') });

/** Summarise a conversation's older turns now (docs/protocol.md, "Context window and compaction"). */
export const CompactConversationCommand = command('compact_conversation', {
  conversation_id: nonEmpty('conversation_id'),
  /** What the summary must keep in particular ("keep the API design"). */
  focus: z.string({ error: 'focus must be a string' }).trim().min(1, { error: 'focus must not be empty' }).max(2_000, { error: 'focus must be at most 2000 characters' }).optional(),
});

export const Command = z.discriminatedUnion('type', [
  AuthCommand,
  ChatCommand,
  GetConfigCommand,
  UpdateConfigCommand,
  ListConversationsCommand,
  GetMessagesCommand,
  ListToolsCommand,
  ListInstructionsCommand,
  ListPromptsCommand,
  DeleteConversationCommand,
  PermissionResponseCommand,
  ListPendingPermissionsCommand,
  CancelCommand,
  RemoveQueuedCommand,
  FollowConversationCommand,
  UnfollowConversationCommand,
  ListDeliveriesCommand,
  RetryDeliveryCommand,
  CreatePairingCommand,
  RelayStatusCommand,
  CreateLanPairingCommand,
  ListDevicesCommand,
  RevokeDeviceCommand,
  PushInfoCommand,
  PushSubscribeCommand,
  PushSettingsCommand,
  PushUnsubscribeCommand,
  ListPushDevicesCommand,
  PushTestCommand,
  ClientStateCommand,
  GetUsageCommand,
  GetPlanCommand,
  SearchMessagesCommand,
  ExportConversationCommand,
  BackupCommand,
  UndoTurnCommand,
  CompactConversationCommand,
  ListTurnChangesCommand,
  AttachmentBeginCommand,
  AttachmentChunkCommand,
  AttachmentEndCommand,
  GetAttachmentCommand,
  ListAuditCommand,
  VerifyAuditCommand,
  ...WorktreeCommands,
]);
export type Command = z.infer<typeof Command>;
export type CommandType = Command['type'];
export type CommandOf<T extends CommandType> = Extract<Command, { type: T }>;
/** A command as a client writes it: defaulted fields (`stream`, `limit`...) may be left out. */
export type CommandInput = z.input<typeof Command>;
export type CommandInputOf<T extends CommandType> = Extract<CommandInput, { type: T }>;

/** The frame's `id` when it is a valid one, so even a refused frame's error can be matched by its client. */
export function requestIdOf(frame: unknown): RequestId | undefined {
  if (frame === null || typeof frame !== 'object') return undefined;
  const parsed = RequestId.safeParse((frame as { id?: unknown }).id);
  return parsed.success ? parsed.data : undefined;
}

// ---- Response data -------------------------------------------------------------------------

/** `running`: a turn of it is queued or in progress; `waiting`: a permission request of it waits for a person. */
export const ConversationState = z.enum(['idle', 'running', 'waiting']);
export type ConversationState = z.infer<typeof ConversationState>;

/** Longest `last_message` and queued `preview`: the first line of a message, cut there. */
export const PREVIEW_CHARS = 120;

/** A message sent while a turn of its conversation runs: it waits, and can be removed (remove_queued) until it starts. */
export const QueuedMessage = z.object({
  /** Null when its chat carried no client_message_id (it cannot be removed then). */
  client_message_id: z.string().nullable(),
  preview: z.string(),
});
export type QueuedMessage = z.infer<typeof QueuedMessage>;

export const Conversation = z.object({
  id: z.string(),
  title: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  source: z.string(),
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
});
export type Conversation = z.infer<typeof Conversation>;

/** `summary`: earlier turns summarised for the model (or the notice that they could not be); see `compaction`. */
export const MessageRole = z.enum(['user', 'assistant', 'tool', 'summary']);
export type MessageRole = z.infer<typeof MessageRole>;

export const Message = z.object({
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
  /** Replies: the tokens and cost of the turn's provider calls (absent when none were counted). */
  usage: MessageUsage.optional(),
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
});
export type Message = z.infer<typeof Message>;

/** A message matching a search_messages query. */
export const SearchHit = z.object({
  message_id: z.string(),
  conversation_id: z.string(),
  conversation_title: z.string(),
  role: MessageRole,
  timestamp: z.string(),
  /** The message around its first match, whitespace collapsed, `…` where cut. */
  snippet: z.string(),
  /** The matched words in `snippet`: [start, end) offsets in UTF-16 code units (JavaScript string indexes). */
  highlights: z.array(z.tuple([z.number().int(), z.number().int()])),
});
export type SearchHit = z.infer<typeof SearchHit>;

export const ToolInfo = z.object({
  name: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.string()),
  /** `vscode`: another VS Code extension's tool (vscode.lm.tools), offered when the service runs in the editor. */
  from: z.literal('vscode').optional(),
});
export type ToolInfo = z.infer<typeof ToolInfo>;

/** An element of list_deliveries. `receiver` is the URL's origin only: a path or query may hold a token. */
export const Delivery = z.object({
  id: z.string(),
  account: z.string(),
  receiver: z.string(),
  conversation_id: z.string(),
  /** The reply it carries; for an error callback, the incoming message that could not be answered. */
  message_id: z.string(),
  /** `reply`, or `error`: the incoming message could not be answered (webhook/WebhookErrorBody). */
  kind: z.enum(['reply', 'error']),
  status: DeliveryStatus,
  attempts: z.number().int(),
  created_at: z.string(),
  next_attempt_at: z.string().nullable(),
  give_up_at: z.string(),
  last_attempt_at: z.string().nullable(),
  last_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type Delivery = z.infer<typeof Delivery>;

/** How the last push to a device went: `status` is the push service's HTTP status (null: no answer). */
export const PushDeliveryOutcome = z.object({
  at: z.string(),
  ok: z.boolean(),
  status: z.number().int().nullable(),
  error: z.string().optional(),
});
export type PushDeliveryOutcome = z.infer<typeof PushDeliveryOutcome>;

/** A device subscribed to Web Push, as list_push_devices shows it: the endpoint's origin only (its path is the capability). */
export const PushDevice = z.object({
  device_id: z.string(),
  device_name: z.string(),
  created_at: z.string(),
  endpoint_origin: z.string(),
  events: PushEventToggles,
  content_blind: z.boolean(),
  last_delivery: PushDeliveryOutcome.nullable(),
  /** Failed deliveries in a row (0 after a success). */
  failures: z.number().int(),
});
export type PushDevice = z.infer<typeof PushDevice>;

export const PushTestResult = z.object({
  device_id: z.string(),
  ok: z.boolean(),
  status: z.number().int().nullable(),
  error: z.string().optional(),
});
export type PushTestResult = z.infer<typeof PushTestResult>;

/** A paired phone (list_devices): its credential is its own, revocable on its own. */
export const PairedDevice = z.object({
  device_id: z.string(),
  device_name: z.string(),
  paired_at: z.string(),
  last_seen: z.string().nullable(),
  via: z.enum(['lan', 'relay']),
  /** Whether a Web Push subscription of the same device_id exists. */
  push: z.boolean(),
});
export type PairedDevice = z.infer<typeof PairedDevice>;

export const PermissionMode = z.enum(['ask', 'allow', 'deny']);
export type PermissionMode = z.infer<typeof PermissionMode>;

/** What get_config answers: never a secret (docs/protocol.md). */
export const PublicConfig = z.object({
  provider: z.string(),
  model: z.string(),
  temperature: z.number(),
  permission_mode: PermissionMode,
  base_url: z.string().nullable(),
  api_key_set: z.boolean(),
  permission_rules: z.object({ allow: z.array(z.string()), deny: z.array(z.string()) }),
  permission_timeout_seconds: z.number().int(),
  /** How service.json's system_prompt joins the built-in one (`add` or `replace`); the prompts' text is not sent. */
  system_prompt_mode: SystemPromptMode,
  /** The instruction files every conversation is given (the user's and the workspace roots'); list_instructions adds a conversation's nested ones. */
  instructions: z.array(InstructionFileInfo).optional(),
});
export type PublicConfig = z.infer<typeof PublicConfig>;
