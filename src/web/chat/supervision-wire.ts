/**
 * The supervision part of the protocol as the page uses it (docs/protocol.md, "Permission requests",
 * "Permission rules"): the protocol's own types (type-only imports: the bundle holds no zod), and one
 * way to send a command that resolves undefined when the connection dropped before the answer.
 */
import type { CommandInput, Conversation, EnvelopeOf, PermissionDecision, PermissionRequest, PermissionRules, ResultOf, ServiceEvent } from '../../protocol';
import type { ServiceConnection } from '../connection';

export type Decision = PermissionDecision;
export type { PermissionRules };
/** A waiting request as `list_pending_permissions` gives it: the event's fields without `event`. */
export type PendingRequest = PermissionRequest;
export type ResolvedEvent = Extract<ServiceEvent, { event: 'permission.resolved' }>;
export type PermissionAnswer = ResultOf<'permission_response'>;
/** A conversation row with its supervision state (`list_conversations`, `conversation.updated`). */
export type SupervisedConversation = Conversation;

/** Sends a command; resolves its envelope, or undefined when the connection dropped before the answer. */
export async function sendCommand<C extends CommandInput>(connection: ServiceConnection, frame: C): Promise<EnvelopeOf<C['type']> | undefined> {
  try {
    return await connection.request(frame);
  } catch {
    return undefined;
  }
}
