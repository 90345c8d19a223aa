import type { Agent } from '../agent/agent';
import type { PermissionBroker } from '../agent/permission-broker';
import type { PermissionGate } from '../agent/permissions';
import type { ToolRegistry } from '../agent/tools/registry';
import type { ConfigFile } from '../config/config-file';
import type { Logger } from '../log/logger';
import type { Store } from '../store';
import type { RelayLinkStatus } from '../protocol';
import type { PairingSecrets } from '../transport/pairing-secrets';
import type { DeliveryCommands } from '../transport/webhook-outbox';
import type { EventHub } from './event-hub';
import type { RunningChats } from './running-chats';

/** What the command handlers work with; built once by the service. */
export interface CommandContext {
  config: ConfigFile;
  store: Store;
  agent: Agent;
  events: EventHub;
  running: RunningChats;
  tools: ToolRegistry;
  permissions: PermissionBroker;
  gate: PermissionGate;
  logger: Logger;
  /** The webhook outbox (list_deliveries, retry_delivery). */
  deliveries: DeliveryCommands;
  /** One-time pairing secrets for phones through the relay (create_pairing). */
  pairings: PairingSecrets;
  /** The relay links' state (relay_status). */
  relay: { status(): RelayLinkStatus[] };
}
