/**
 * The Web Push commands the page sends (docs/protocol.md, "Web Push"), typed by the protocol's own
 * schemas (type-only imports: the bundle holds no zod), and one typed way to send them.
 */
import type { CommandInputOf, EnvelopeOf, PushDevice } from '../../protocol';
import type { ServiceConnection } from '../connection';

export type { PushDevice };
export type PushEventChoice = PushDevice['events'];
export type PushEventKind = keyof PushEventChoice;
export type PushSubscriptionWire = CommandInputOf<'push_subscribe'>['subscription'];

export type PushCommand = 'push_info' | 'push_subscribe' | 'push_settings' | 'push_unsubscribe' | 'list_push_devices' | 'push_test' | 'client_state';

/** Sends one push command; rejects when not connected (as every request does). */
export function pushRequest<T extends PushCommand>(connection: ServiceConnection, type: T, args: Omit<CommandInputOf<T>, 'type' | 'id'>): Promise<EnvelopeOf<T>> {
  return connection.request({ type, ...args } as CommandInputOf<T>) as Promise<EnvelopeOf<T>>;
}
