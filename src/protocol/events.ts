import * as z from 'zod';
import { AuditAppendedEvent } from './audit';
import { ChatDeltaEvent, ChatMessageEvent, ToolCallEvent, ToolResultEvent, TurnEndedEvent, TurnRetryingEvent } from './chat';
import { ConfigChangedEvent } from './config';
import { ConversationDeletedEvent, ConversationUpdatedEvent } from './conversations';
import { PermissionRequestEvent, PermissionResolvedEvent } from './permissions';
import { PlanUpdatedEvent } from './plan';
import { TurnUndoneEvent } from './undo';
import { ChangesReadyEvent } from './worktrees';
import { lazySchema } from './lazy-schema';

/**
 * Every event the service sends: pushed unsolicited to authenticated sockets, they carry `event`, never
 * `status`. Each is declared in its domain's file; a conversation's carry `seq` (envelope.ts).
 */
export const ServiceEvent = lazySchema(() =>
  z.discriminatedUnion('event', [
    ChatDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    PermissionRequestEvent,
    PermissionResolvedEvent,
    ConfigChangedEvent,
    ConversationUpdatedEvent,
    ConversationDeletedEvent,
    TurnEndedEvent,
    TurnRetryingEvent,
    PlanUpdatedEvent,
    ChatMessageEvent,
    AuditAppendedEvent,
    ChangesReadyEvent,
    TurnUndoneEvent,
  ]),
);
export type ServiceEvent = z.infer<typeof ServiceEvent>;
