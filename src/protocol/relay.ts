import * as z from 'zod';
import { command, nonEmpty } from './command-frame';
import { lazySchema } from './lazy-schema';

/** The relay (docs/relay.md): pairing a phone through a relay channel, and each relay link's state. */

/** A one-time pairing for a phone through the relay channel named `channel` (default: the first). */
export const CreatePairingCommand = lazySchema(() =>
  command('create_pairing', {
    channel: nonEmpty('channel').optional(),
  }),
);

/** The state of each relay link. */
export const RelayStatusCommand = lazySchema(() => command('relay_status', {}));

/** A relay link's state: `connecting` (registering or opening the socket), `online`, `offline` (waiting to retry). */
export const RelayLinkState = lazySchema(() => z.enum(['connecting', 'online', 'offline']));
export type RelayLinkState = z.infer<typeof RelayLinkState>;

/** One `websocket` channel's link to its relay, as `relay_status` and `GET /health/relay` show it. Never holds the token. */
export const RelayLinkStatus = lazySchema(() =>
  z.object({
    name: z.string(),
    url: z.string(),
    state: RelayLinkState,
    /** When the link entered this state (ISO 8601). */
    since: z.string(),
    /** Why the last attempt failed or the socket dropped; null once online. */
    last_error: z.string().nullable(),
    /** Relayed clients connected through this link right now. */
    clients: z.number().int(),
    /** The next connection attempt, while offline. */
    retry_at: z.string().nullable(),
  }),
);
export type RelayLinkStatus = z.infer<typeof RelayLinkStatus>;

/** What `create_pairing` answers (docs/relay.md §Pairing). */
export const PairingInfo = lazySchema(() =>
  z.object({
    machine_id: z.string(),
    machine_key: z.string(),
    relay_url: z.string(),
    pairing_secret: z.string(),
    expires_in: z.number().int(),
    pairing_url: z.string(),
  }),
);
export type PairingInfo = z.infer<typeof PairingInfo>;

export const RelayResults = lazySchema(() => ({
  create_pairing: PairingInfo,
  relay_status: z.object({ relays: z.array(RelayLinkStatus) }),
}));
