import * as z from 'zod';
import { command } from './command-frame';
import { displayName } from './display-name';
import { lazySchema } from './lazy-schema';

/** A session's first frame (docs/protocol.md, "Authentication"): a credential, or a pairing secret spent for one. */
export const AuthCommand = lazySchema(() =>
  command('auth', {
    /** The access token, a session token, or a paired device's `device_token`. */
    token: z.string({ error: 'token must be a string' }).optional(),
    /** Instead of a token: a one-time pairing secret, spent for this device's own credential (docs/protocol.md, "Devices"). */
    pairing_secret: z.string({ error: 'pairing_secret must be a string' }).min(1).max(256).optional(),
    /** With `pairing_secret`: the page's own device id (its Web Push id) and a name for the list of devices. */
    device_id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'device_id must be 1 to 64 letters, digits, - or _' })
      .optional(),
    device_name: z.string({ error: 'device_name must be a string' }).max(100, { error: 'device_name must be at most 100 characters' }).transform(displayName).optional(),
    /** The client's PROTOCOL_VERSION (protocol/version.ts): the reply says which side must update when they differ. */
    protocol: z.number({ error: 'protocol must be an integer' }).int({ error: 'protocol must be an integer' }).optional(),
  }),
);

export const AuthResults = lazySchema(() => ({
  // The session answers `auth` itself (the first frame); dispatched later, it is always refused.
  auth: z.object({
    authenticated: z.literal(true),
    /** Seconds the session token has left; null for the access token. */
    expires_in: z.number().int().nullable(),
    /** The service's PROTOCOL_VERSION and its build (package version). */
    protocol: z.number().int(),
    server_build: z.string(),
    /** Present when the client's `protocol` differs: which side must be updated (protocol/version.ts). */
    update: z.enum(['client', 'service']).optional(),
    /** After `pairing_secret`: this device's id and its own token (keep it; send it as `token` from now on). */
    device_id: z.string().optional(),
    device_token: z.string().optional(),
    /**
     * How this session is named where it acts: the `from` of its messages, a conversation's `started_by`,
     * a permission's `decided_by` (a paired device's name, a username, `editor`, `access token`), so a
     * client can tell its own doings from another's.
     */
    acting_as: z.string().optional(),
  }),
}));
