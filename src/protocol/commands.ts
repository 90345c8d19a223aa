import * as z from 'zod';
import { ListInstructionsCommand, ListPromptsCommand, ListToolsCommand } from './agent-context';
import { AttachmentBeginCommand, AttachmentChunkCommand, AttachmentEndCommand, GetAttachmentCommand } from './attachments';
import { ListAuditCommand, VerifyAuditCommand } from './audit';
import { AuthCommand } from './auth';
import { BackupCommand } from './backup';
import { CancelCommand, ChatCommand, FollowConversationCommand, RemoveQueuedCommand, RetryTurnCommand, UnfollowConversationCommand } from './chat';
import { GetConfigCommand, UpdateConfigCommand } from './config';
import { CompactConversationCommand, DeleteConversationCommand, ExportConversationCommand, GetMessagesCommand, ListConversationsCommand, SearchMessagesCommand } from './conversations';
import { CreateLanPairingCommand, ListDevicesCommand, RevokeDeviceCommand } from './devices';
import { ListPendingPermissionsCommand, PermissionResponseCommand } from './permissions';
import { GetPlanCommand } from './plan';
import { ClientStateCommand, ListPushDevicesCommand, PushInfoCommand, PushSettingsCommand, PushSubscribeCommand, PushTestCommand, PushUnsubscribeCommand } from './push';
import { CreatePairingCommand, RelayStatusCommand } from './relay';
import { ListTurnChangesCommand, UndoTurnCommand } from './undo';
import { GetUsageCommand } from './usage';
import { ListDeliveriesCommand, RetryDeliveryCommand } from './webhook';
import { WorktreeCommands } from './worktrees';
import { lazySchema } from './lazy-schema';

/** Its argument, checked by the compiler: each key is the `type` its command's schema parses. */
const byType = <R extends { [K in keyof R]: z.ZodType<{ type: K }> }>(commands: R): R => commands;

/**
 * Every command a client may send, by its type: the commands each domain file declares (chat.ts,
 * conversations.ts, permissions.ts, push.ts, ...; each file holds its commands, their results and its
 * events). results.ts maps each to its answer; events.ts unites the events. The dispatcher parses a
 * frame with its type's schema alone, so a start builds only the schemas of the commands it is sent
 * (each is a lazySchema).
 */
export const CommandSchemas = byType({
  auth: AuthCommand,
  chat: ChatCommand,
  retry_turn: RetryTurnCommand,
  get_config: GetConfigCommand,
  update_config: UpdateConfigCommand,
  list_conversations: ListConversationsCommand,
  get_messages: GetMessagesCommand,
  list_tools: ListToolsCommand,
  list_instructions: ListInstructionsCommand,
  list_prompts: ListPromptsCommand,
  delete_conversation: DeleteConversationCommand,
  permission_response: PermissionResponseCommand,
  list_pending_permissions: ListPendingPermissionsCommand,
  cancel: CancelCommand,
  remove_queued: RemoveQueuedCommand,
  follow_conversation: FollowConversationCommand,
  unfollow_conversation: UnfollowConversationCommand,
  list_deliveries: ListDeliveriesCommand,
  retry_delivery: RetryDeliveryCommand,
  create_pairing: CreatePairingCommand,
  relay_status: RelayStatusCommand,
  create_lan_pairing: CreateLanPairingCommand,
  list_devices: ListDevicesCommand,
  revoke_device: RevokeDeviceCommand,
  push_info: PushInfoCommand,
  push_subscribe: PushSubscribeCommand,
  push_settings: PushSettingsCommand,
  push_unsubscribe: PushUnsubscribeCommand,
  list_push_devices: ListPushDevicesCommand,
  push_test: PushTestCommand,
  client_state: ClientStateCommand,
  get_usage: GetUsageCommand,
  get_plan: GetPlanCommand,
  search_messages: SearchMessagesCommand,
  export_conversation: ExportConversationCommand,
  backup: BackupCommand,
  undo_turn: UndoTurnCommand,
  compact_conversation: CompactConversationCommand,
  list_turn_changes: ListTurnChangesCommand,
  attachment_begin: AttachmentBeginCommand,
  attachment_chunk: AttachmentChunkCommand,
  attachment_end: AttachmentEndCommand,
  get_attachment: GetAttachmentCommand,
  list_audit: ListAuditCommand,
  verify_audit: VerifyAuditCommand,
  ...WorktreeCommands,
});

type CommandSchema = (typeof CommandSchemas)[keyof typeof CommandSchemas];

/** The same commands as one union (for types, and a client's check of a whole frame). */
export const Command = lazySchema(() => z.discriminatedUnion('type', Object.values(CommandSchemas) as [CommandSchema, ...CommandSchema[]]));
export type Command = z.infer<typeof Command>;
export type CommandType = Command['type'];
export type CommandOf<T extends CommandType> = Extract<Command, { type: T }>;
/** A command as a client writes it: defaulted fields (`stream`, `limit`...) may be left out. */
export type CommandInput = z.input<typeof Command>;
export type CommandInputOf<T extends CommandType> = Extract<CommandInput, { type: T }>;
