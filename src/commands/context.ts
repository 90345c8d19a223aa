import type { Agent } from '../agent/agent';
import type { StoredAttachment } from '../agent/attachments/content';
import type { TurnFailure } from '../agent/turn-failure';
import type { ConversationActivity } from '../agent/conversation-activity';
import type { PermissionBroker } from '../agent/permission-broker';
import type { PermissionGate } from '../agent/permissions';
import type { ToolRegistry } from '../agent/tools/registry';
import type { TurnUndo } from '../agent/turn-undo';
import type { ConfigFile } from '../config/config-file';
import type { Logger } from '../log/logger';
import type { NewMessage, Store, WorktreeStats, WriteTx } from '../store';
import type { WorktreeRecord, WorktreeState } from '../protocol/worktrees';
import type { CommandOf, Delivery, DeliveryStatus, PairingInfo, PushDevice, PushTestResult, RelayLinkStatus, RequestId, ResultOf } from '../protocol';
import type { EventHub } from './event-hub';
import type { TurnRunner } from './turns/turn-runner';
import type { ClientSession } from './session';
import type { AttachmentUploads } from './attachment-uploads';
import type { RenderedExports } from './rendered-exports';

/** What the command handlers work with; built once by the service. */
export interface CommandContext {
  config: ConfigFile;
  store: Store;
  agent: Agent;
  events: EventHub;
  /** Every turn runs here (chats and webhook messages): cancel, resends, following, turn.ended. */
  turns: TurnRunner;
  tools: ToolRegistry;
  permissions: PermissionBroker;
  gate: PermissionGate;
  /** What each conversation is doing now (list_conversations' `state`). */
  activity: ConversationActivity;
  logger: Logger;
  /** The webhook outbox (list_deliveries, retry_delivery). */
  deliveries: DeliveryCommands;
  /** The relay channels: their links' state (relay_status) and phone pairings (create_pairing). */
  relay: RelayCommands;
  /** Web Push: devices, the VAPID key, test pushes, the pages' visibility (channels/push). */
  push: PushCommands;
  /** Undoing a turn's file writes (undo_turn, list_turn_changes). */
  undo: TurnUndo;
  /** Attachments being uploaded in chunks. */
  uploads: AttachmentUploads;
  /** Exports rendered for a download in pieces, kept between its pieces. */
  exports: RenderedExports;
  /** Conversations' own worktrees (issue 24): review and land read them and record a land or discard. */
  worktrees: WorktreeRecords;
}

/** The worktree records as review and land use them (the store's `worktrees` table implements it). */
export interface WorktreeRecords {
  /** The conversation's worktree (any state), or undefined when it works in the workspace. */
  worktreeOf(conversationId: string): WorktreeRecord | undefined;
  /** false when the conversation has no worktree. */
  setState(conversationId: string, state: WorktreeState): Promise<boolean>;
  /** The counts list_conversations shows (after a revert, commit or land); false when it has no worktree. */
  setStats(conversationId: string, stats: WorktreeStats): Promise<boolean>;
}

export type { TurnFailure } from '../agent/turn-failure';

/**
 * One turn of a conversation, as its starter gives it to the turn runner (commands/turns/turn-runner.ts):
 * a client's chat, or a message a channel stored first (the webhook inbox).
 */
export interface TurnRequest {
  /** Who sent it: its source owns the conversation, its request id cancels it. */
  session: ClientSession;
  /** The id `cancel` names it by in its session: a chat's request id, a webhook message's id. */
  requestId: RequestId | undefined;
  message: ChatTurn | AdmittedTurn | RetryTurn;
  /**
   * The starter's part of the turn's end, done before `turn.ended` goes out (the webhook inbox writes
   * its error callback there). Resolves false when the turn is not over for good (tried again later,
   * left for the next start): then no `turn.ended`. Absent: every end of a turn that began is announced.
   */
  settle?(end: TurnEnd): Promise<boolean>;
}

/** A client's chat: the runner stores the message, then answers it. */
export interface ChatTurn {
  kind: 'chat';
  command: CommandOf<'chat'>;
  /** The command handler's checks, run before the turn (not for a resend): the attachments the chat may use. */
  check(): readonly StoredAttachment[];
}

/** A client's retry_turn: the runner answers the conversation's last user message again (nothing new stored before the reply). */
export interface RetryTurn {
  kind: 'retry';
  command: CommandOf<'retry_turn'>;
}

/** A message a channel already stored: `admit` puts it into its conversation when its turn comes. */
export interface AdmittedTurn {
  kind: 'admitted';
  conversationId: string;
  /** What it is listed and removed by while it waits behind a running turn (a webhook message's id). */
  clientMessageId: string;
  /** Its text, for its preview in the conversation's queue. */
  text: string;
  /**
   * Throws when the message is not to run now (its account's daily budget is spent): asked when its turn
   * comes, before anything is made for it (a new conversation's worktree, a whole checkout).
   */
  mayStart(): void;
  admit(): Promise<void>;
  /** Overrides the configured model (a webhook account's `model`). */
  model?: string;
  /** Writes the reply instead of the agent (with the sender's delivery and `alsoInTx`, the turn's usage, in one transaction). */
  storeReply(reply: NewMessage, alsoInTx: (tx: WriteTx) => void): Promise<void>;
}

/**
 * How a turn ended: `removed` from the queue before it began; `failed` with what failed (its error, and
 * the error told as people read it, agent/turn-failure.ts).
 */
export type TurnEnd = { outcome: 'answered' | 'cancelled' | 'removed' } | { outcome: 'failed'; error: unknown; failure: TurnFailure };

/** What a channel (the webhook inbox) starts its messages' turns through: the answer is a chat's result. */
export interface TurnStarter {
  run(request: TurnRequest): Promise<ResultOf<'chat'>>;
}

/** The webhook outbox as commands see it (the transport implements it). */
export interface DeliveryCommands {
  list(filter: { account?: string; status?: DeliveryStatus; limit: number }): Delivery[];
  retry(deliveryId: string): Promise<Delivery>;
}

/** The relay channels as commands see it (the transport implements it). */
export interface RelayCommands {
  status(): RelayLinkStatus[];
  /** A one-time pairing through the named relay channel (the first one when unnamed). */
  createPairing(channelName: string | undefined): Promise<PairingInfo>;
  /** A one-time pairing secret for a phone on the LAN, and the ready link that carries it. */
  createLanPairing(): { pairing_secret: string; expires_in: number; link: string };
}

/**
 * Web Push as commands see it (the transport implements it). Only user clients reach it (push-handlers.ts);
 * a device is its subscriber's (personOf): another password user may not change it, `unauthorized`.
 */
export interface PushCommands {
  info(): Promise<{ vapid_public_key: string }>;
  subscribe(command: CommandOf<'push_subscribe'>, session: ClientSession): Promise<PushDevice>;
  settings(command: CommandOf<'push_settings'>, session: ClientSession): Promise<PushDevice>;
  unsubscribe(deviceId: string, session: ClientSession): Promise<boolean>;
  /** The devices this session may see: the owner every one, anyone else their own. */
  list(session: ClientSession): PushDevice[];
  /** A test notification to the device (not_found if unknown), or to every device. */
  test(deviceId: string | undefined, session: ClientSession): Promise<PushTestResult[]>;
  reportVisibility(session: ClientSession, deviceId: string | undefined, visible: boolean): { device_id: string | null; visible: boolean };
}
