import * as z from 'zod';
import { command } from './command-frame';
import { lazySchema } from './lazy-schema';

/**
 * Paired devices (docs/protocol.md, "Devices"): a phone paired on the LAN or through a relay has its own
 * credential, listed and revoked one by one. The relay's pairing is in relay.ts.
 */

/** A phone page install: random, made by the page (a UUID), kept in its localStorage (its Web Push id too). */
export const DeviceId = lazySchema(() => z.string({ error: 'device_id must be a string' }).regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'device_id must be 1 to 64 letters, digits, - or _' }));

export const ListDevicesCommand = lazySchema(() => command('list_devices', {}));
export const RevokeDeviceCommand = lazySchema(() => command('revoke_device', { device_id: DeviceId }));

/** A one-time pairing secret for a phone on the LAN (the link is `#url=<ws url>&pair=<secret>`). */
export const CreateLanPairingCommand = lazySchema(() => command('create_lan_pairing', {}));

/** A paired phone (list_devices): its credential is its own, revocable on its own. */
export const PairedDevice = lazySchema(() =>
  z.object({
    device_id: z.string(),
    device_name: z.string(),
    paired_at: z.string(),
    last_seen: z.string().nullable(),
    via: z.enum(['lan', 'relay']),
    /** Whether a Web Push subscription of the same device_id exists. */
    push: z.boolean(),
  }),
);
export type PairedDevice = z.infer<typeof PairedDevice>;

export const DeviceResults = lazySchema(() => ({
  list_devices: z.object({ devices: z.array(PairedDevice) }),
  revoke_device: z.object({ revoked: z.boolean() }),
  create_lan_pairing: z.object({ pairing_secret: z.string(), expires_in: z.number().int(), link: z.string() }),
}));
