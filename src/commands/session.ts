import { randomUUID } from 'node:crypto';
import type { ServiceEvent } from '../protocol';
import { sourceText, type Source } from '../protocol/sources';

/**
 * One client of the dispatcher: a WebSocket connection, a relayed client, the editor's chat view or a
 * webhook account. Transports create sessions; command handlers only see this interface.
 */
export interface ClientSession {
  readonly id: string;
  /** Where it comes from: recorded (as its text, protocol/sources.ts) as its conversations' source. */
  readonly source: Source;
  /** Whether a person behind this session can answer permission prompts. */
  readonly canAnswerPermissions: boolean;
  /** How a socket authenticated: with the service's access token, or a session token of `POST /auth`. Absent for the editor and webhooks. */
  readonly principal?: 'access' | 'session';
  /** The paired device this session authenticated as (its own credential; the owner's device). */
  readonly deviceId?: string;
  /** The password user of a `session` principal (service.json `users`). */
  readonly username?: string;
  /** Where the client connects from: a LAN socket's remote address, `relay:<channel>` for a relayed client. */
  readonly address?: string;
  send(event: ServiceEvent): void;
  /** Re-checks the client's credential and address after a config change; closes the client if either is no longer good. */
  recheck?(): void;
}

export function newSessionId(): string {
  return randomUUID();
}

/** A session's person (docs/protocol.md, "People"): the one key of everything that is a person's own. */
export { OWNER_PERSON, personOf } from '../protocol/sources';

/**
 * The conversations' source a session is held to: a webhook account sees only its own conversations (their
 * source is its own); undefined for the user's clients, who see every conversation (protocol/sources.ts canAccess).
 */
export function ownConversationsSource(session: Pick<ClientSession, 'source'>): string | undefined {
  return session.source.kind === 'webhook' ? sourceText(session.source) : undefined;
}
