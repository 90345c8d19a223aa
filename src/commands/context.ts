import type { Agent } from '../agent/agent';
import type { ConversationActivity } from '../agent/conversation-activity';
import type { PermissionBroker } from '../agent/permission-broker';
import type { PermissionGate } from '../agent/permissions';
import type { ToolRegistry } from '../agent/tools/registry';
import type { TurnUndo } from '../agent/turn-undo';
import type { ConfigFile } from '../config/config-file';
import type { Logger } from '../log/logger';
import type { Store } from '../store';
import type { CommandOf, Delivery, DeliveryStatus, PairingInfo, PushDevice, PushTestResult, RelayLinkStatus } from '../protocol';
import type { EventHub } from './event-hub';
import type { ChatResends } from './chat-resends';
import type { RunningChats } from './running-chats';
import type { ClientSession } from './session';
import type { AttachmentUploads } from './attachment-uploads';
import type { RenderedExports } from './rendered-exports';

/** What the command handlers work with; built once by the service. */
export interface CommandContext {
  config: ConfigFile;
  store: Store;
  agent: Agent;
  events: EventHub;
  running: RunningChats;
  /** Chats sent with a client_message_id, so a resend is answered, not run again. */
  resends: ChatResends;
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
  /** Web Push: devices, the VAPID key, test pushes, the pages' visibility (transport/push). */
  push: PushCommands;
  /** Undoing a turn's file writes (undo_turn, list_turn_changes). */
  undo: TurnUndo;
  /** Attachments being uploaded in chunks. */
  uploads: AttachmentUploads;
  /** Exports rendered for a download in pieces, kept between its pieces. */
  exports: RenderedExports;
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
  /** A one-time pairing secret for a phone on the LAN. */
  createLanPairing(): { pairing_secret: string; expires_in: number };
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
