/**
 * The Web Push commands the page sends (docs/protocol.md, "Web Push"). Their zod schemas live with the
 * service's side of Web Push; the page needs only their shapes, written here as plain types so the
 * bundle holds no zod, and one typed way to send them.
 */
import type { CommandInput } from '../../protocol';
import type { ServiceConnection } from '../connection';

export type PushEventKind = 'prompt' | 'finished' | 'failed' | 'webhook';
export type PushEventChoice = Record<PushEventKind, boolean>;

export interface PushDevice {
  device_id: string;
  device_name: string;
  created_at: string;
  endpoint_origin: string;
  events: PushEventChoice;
  content_blind: boolean;
  last_delivery: { at: string; ok: boolean; status: number | null; error?: string } | null;
  failures: number;
}

export interface PushSubscriptionWire {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

/** Each command's fields (besides `type` and `id`) and its answer's `data`. */
interface PushCommands {
  push_info: { args: Record<string, never>; data: { vapid_public_key: string } };
  push_subscribe: {
    args: { device_id: string; device_name: string; subscription: PushSubscriptionWire; events?: PushEventChoice; content_blind?: boolean };
    data: { device: PushDevice };
  };
  push_settings: { args: { device_id: string; device_name?: string; events?: PushEventChoice; content_blind?: boolean }; data: { device: PushDevice } };
  push_unsubscribe: { args: { device_id: string }; data: { removed: boolean } };
  list_push_devices: { args: Record<string, never>; data: { devices: PushDevice[] } };
  push_test: { args: { device_id?: string }; data: { results: { device_id: string; ok: boolean; status: number | null; error?: string }[] } };
  client_state: { args: { device_id?: string; visible: boolean }; data: Record<string, unknown> };
}

export type PushCommand = keyof PushCommands;
export type PushAnswer<T extends PushCommand> = { status: 'ok'; data: PushCommands[T]['data'] } | { status: 'error'; error: string; code: string };

/** Sends one push command; rejects when not connected (as every request does). */
export async function pushRequest<T extends PushCommand>(connection: ServiceConnection, type: T, args: PushCommands[T]['args']): Promise<PushAnswer<T>> {
  const frame = { type, ...args } as unknown as CommandInput;
  return (await connection.request(frame)) as unknown as PushAnswer<T>;
}
