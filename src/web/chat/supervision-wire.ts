/**
 * The issue-11 wire fields the page reads and the commands it sends (docs/protocol.md, "Permission
 * requests", "Rules"), as the page sees them: every new field optional, so the page works with a service
 * that has them and degrades with one that does not (older service, or before all of issue 11 is in).
 * Once src/protocol carries them (commands.ts, events.ts, results.ts), these types can be replaced by
 * the protocol's and `sendCommand` by `connection.request`. Types only, like the rest of the page.
 */
import type { CommandInput, Conversation, ErrorEnvelope, ServiceEvent } from '../../protocol';
import type { ServiceConnection } from '../connection';

/** `allow_always` adds the narrowest rule for the call (owner only). */
export type Decision = 'allow' | 'allow_session' | 'allow_always' | 'deny';

export type PermissionRequest = Extract<ServiceEvent, { event: 'permission.request' }> & {
  created_at?: string;
  expires_at?: string;
  conversation_title?: string;
};

/** A stored pending request as `list_pending_permissions` gives it: the event's fields without `event`. */
export type PendingRequest = Omit<PermissionRequest, 'event'>;

export type ResolvedEvent = Extract<ServiceEvent, { event: 'permission.resolved' }> & {
  decided_by?: string;
  /** `answered` | `expired` | `cancelled` | `restarted`. */
  reason?: string;
  rule_added?: string;
};

export interface PermissionAnswer {
  request_id: string;
  decision: Decision;
  decided_by?: string;
  already_decided?: boolean;
  rule_added?: string;
}

export interface PermissionRules {
  allow: string[];
  deny: string[];
}

/** A conversation row with its supervision state (`list_conversations`, `conversation.updated`). */
export type SupervisedConversation = Conversation & {
  state?: 'idle' | 'running' | 'waiting';
  pending_permissions?: number;
};

export type Answer<T> = { status: 'ok'; data: T } | ErrorEnvelope;

/**
 * Sends a command whose shape src/protocol does not type yet (see the header). Resolves undefined when
 * the connection dropped before the answer.
 */
export async function sendCommand<T>(connection: ServiceConnection, frame: { type: string } & Record<string, unknown>): Promise<Answer<T> | undefined> {
  try {
    return (await connection.request(frame as unknown as CommandInput)) as unknown as Answer<T>;
  } catch {
    return undefined;
  }
}
