import { z } from 'zod';

/** A relay link's state: `connecting` (registering or opening the socket), `online`, `offline` (waiting to retry). */
export const RelayLinkState = z.enum(['connecting', 'online', 'offline']);
export type RelayLinkState = z.infer<typeof RelayLinkState>;

/** One `websocket` channel's link to its relay, as `relay_status` and `GET /health/relay` show it. Never holds the token. */
export const RelayLinkStatus = z.object({
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
});
export type RelayLinkStatus = z.infer<typeof RelayLinkStatus>;

/** What `create_pairing` answers (docs/relay.md §Pairing). */
export const PairingInfo = z.object({
  machine_id: z.string(),
  machine_key: z.string(),
  relay_url: z.string(),
  pairing_secret: z.string(),
  expires_in: z.number().int(),
  pairing_url: z.string(),
});
export type PairingInfo = z.infer<typeof PairingInfo>;
