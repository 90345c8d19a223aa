import { randomUUID } from 'node:crypto';
import type { ServiceEvent } from '../protocol';

/**
 * One client of the dispatcher: a WebSocket connection, a relayed client, the editor's chat view or a
 * webhook account. Transports create sessions; command handlers only see this interface.
 */
export interface ClientSession {
  readonly id: string;
  /** `editor`, `ws`, `relay`, or `webhook:<account>`: recorded as a conversation's source. */
  readonly source: string;
  /** Whether a person behind this session can answer permission prompts. */
  readonly canAnswerPermissions: boolean;
  send(event: ServiceEvent): void;
}

export function newSessionId(): string {
  return randomUUID();
}

/** Webhook accounts own their conversations; everyone else shares the rest (decisions.md). */
export function ownerOf(source: string): string {
  return source.startsWith('webhook:') ? source : 'shared';
}
