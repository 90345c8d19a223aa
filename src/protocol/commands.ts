import { z } from 'zod';
import { ListInstructionsCommand, ListPromptsCommand, ListToolsCommand } from './agent-context';
import { AttachmentBeginCommand, AttachmentChunkCommand, AttachmentEndCommand, GetAttachmentCommand } from './attachments';
import { ListAuditCommand, VerifyAuditCommand } from './audit';
import { AuthCommand } from './auth';
import { BackupCommand } from './backup';
import { CancelCommand, ChatCommand, FollowConversationCommand, RemoveQueuedCommand, UnfollowConversationCommand } from './chat';
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

/**
 * Every command a client may send, one union of the commands each domain file declares (chat.ts,
 * conversations.ts, permissions.ts, push.ts, ...; each file holds its commands, their results and its
 * events). results.ts maps each to its answer; events.ts unites the events.
 */
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
