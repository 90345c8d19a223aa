import * as z from 'zod';
import { command } from './command-frame';
import { DeviceId } from './devices';
import { displayNameField } from './display-name-field';
import { lazySchema } from './lazy-schema';

/**
 * Web Push (docs/protocol.md, "Web Push"): a device's subscription and what it wants to be told, test
 * pushes, and the page's visibility (no push goes to a device while its page is in the foreground).
 */

const DeviceName = lazySchema(() => displayNameField('device_name', 100));

/** Which notifications a device wants; each on unless set off. */
export const PushEventToggles = lazySchema(() =>
  z.object({
    prompt: z.boolean().default(true),
    finished: z.boolean().default(true),
    failed: z.boolean().default(true),
    webhook: z.boolean().default(true),
    /** A worktree conversation's turn ended with changes to review (changes.ready). */
    review: z.boolean().default(true),
  }),
);
export type PushEventToggles = z.infer<typeof PushEventToggles>;

/** A browser's PushSubscription (toJSON()); its keys are checked by the service (a P-256 point, 16 bytes). */
export const PushSubscriptionInput = lazySchema(() =>
  z.object(
    {
      endpoint: z.string({ error: 'endpoint must be a string' }).max(2048, { error: 'endpoint must be at most 2048 characters' }),
      keys: z.object(
        {
          p256dh: z.string({ error: 'p256dh must be a string' }).max(200, { error: 'p256dh is too long' }),
          auth: z.string({ error: 'auth must be a string' }).max(100, { error: 'auth is too long' }),
        },
        { error: 'keys must be an object with p256dh and auth' },
      ),
    },
    { error: 'subscription must be an object with endpoint and keys' },
  ),
);
export type PushSubscriptionInput = z.infer<typeof PushSubscriptionInput>;

/** The service's VAPID public key (the page's applicationServerKey). */
export const PushInfoCommand = lazySchema(() => command('push_info', {}));

/** Registers (or replaces) a device's push subscription. */
export const PushSubscribeCommand = lazySchema(() =>
  command('push_subscribe', {
    device_id: DeviceId,
    device_name: DeviceName,
    subscription: PushSubscriptionInput,
    events: PushEventToggles.optional(),
    content_blind: z.boolean().optional(),
  }),
);

/** Changes a device's name or what it is told; fields left out stay. */
export const PushSettingsCommand = lazySchema(() =>
  command('push_settings', {
    device_id: DeviceId,
    device_name: DeviceName.optional(),
    events: PushEventToggles.partial().optional(),
    content_blind: z.boolean().optional(),
  }),
);

export const PushUnsubscribeCommand = lazySchema(() => command('push_unsubscribe', { device_id: DeviceId }));

export const ListPushDevicesCommand = lazySchema(() => command('list_push_devices', {}));

/** A test notification to one device, or to every device. */
export const PushTestCommand = lazySchema(() => command('push_test', { device_id: DeviceId.optional() }));

/** The page tells whether it is visible in the foreground: no push goes to a device while it is. */
export const ClientStateCommand = lazySchema(() =>
  command('client_state', {
    device_id: DeviceId.optional(),
    visible: z.boolean({ error: 'visible must be a boolean' }),
  }),
);

/** How the last push to a device went: `status` is the push service's HTTP status (null: no answer). */
export const PushDeliveryOutcome = lazySchema(() =>
  z.object({
    at: z.string(),
    ok: z.boolean(),
    status: z.number().int().nullable(),
    error: z.string().optional(),
  }),
);
export type PushDeliveryOutcome = z.infer<typeof PushDeliveryOutcome>;

/** A device subscribed to Web Push, as list_push_devices shows it: the endpoint's origin only (its path is the capability). */
export const PushDevice = lazySchema(() =>
  z.object({
    device_id: z.string(),
    device_name: z.string(),
    created_at: z.string(),
    endpoint_origin: z.string(),
    events: PushEventToggles,
    content_blind: z.boolean(),
    last_delivery: PushDeliveryOutcome.nullable(),
    /** Failed deliveries in a row (0 after a success). */
    failures: z.number().int(),
  }),
);
export type PushDevice = z.infer<typeof PushDevice>;

export const PushTestResult = lazySchema(() =>
  z.object({
    device_id: z.string(),
    ok: z.boolean(),
    status: z.number().int().nullable(),
    error: z.string().optional(),
  }),
);
export type PushTestResult = z.infer<typeof PushTestResult>;

export const PushResults = lazySchema(() => ({
  push_info: z.object({ vapid_public_key: z.string() }),
  push_subscribe: z.object({ device: PushDevice }),
  push_settings: z.object({ device: PushDevice }),
  push_unsubscribe: z.object({ removed: z.boolean() }),
  list_push_devices: z.object({ devices: z.array(PushDevice) }),
  push_test: z.object({ results: z.array(PushTestResult) }),
  /** The state in force for this session: the device it names (null: none named yet) and whether its page is visible. */
  client_state: z.object({ device_id: z.string().nullable(), visible: z.boolean() }),
}));
