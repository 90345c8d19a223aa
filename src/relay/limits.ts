/** The relay's limits (docs/relay.md). One place, so the Worker and the Node relay cannot drift. */

/** Largest client frame, in UTF-8 bytes: room for the encryption of a 1 MiB command. */
export const MAX_CLIENT_FRAME_BYTES = 2 * 1024 * 1024;

/** Per-client token bucket: frames a second, and the burst allowed on top. */
export const CLIENT_FRAMES_PER_SECOND = 30;
export const CLIENT_FRAME_BURST = 120;

/** Clients one machine may have at once; more are refused (429), so nobody can exhaust a relay or flood a machine with sessions. */
export const MAX_CLIENTS_PER_MACHINE = 1024;

/** A socket that sent nothing (text `ping` included) for this long is closed. */
export const IDLE_TIMEOUT_MS = 90_000;

/** The close code and reason of a socket closed for silence. */
export const IDLE_CLOSE = { code: 4408, reason: 'idle timeout' } as const;
/** The close code of a machine socket replaced by a newer one. */
export const REPLACED_CLOSE = { code: 4409, reason: 'replaced' } as const;
/** The close code of a client frame over MAX_CLIENT_FRAME_BYTES (RFC 6455 "message too big"). */
export const TOO_BIG_CLOSE = { code: 1009, reason: 'frame too large' } as const;

/** AUTH_TOKEN must be at least this long; the relay refuses to run otherwise. */
export const MIN_AUTH_TOKEN_LENGTH = 32;

/** Largest POST /register body. */
export const MAX_REGISTER_BODY_BYTES = 4096;

/** The heartbeat frames, answered by the relay itself. */
export const PING = 'ping';
export const PONG = 'pong';

/**
 * Clients not yet confirmed by their machine (it has sent them nothing: no end-to-end welcome yet,
 * so they have shown no known key) that one address may hold on one machine; more are refused 429.
 * Confirmed clients do not count: a phone behind the same NAT as a flood still gets in once welcomed.
 */
export const MAX_PENDING_CLIENTS_PER_ADDRESS = 8;

/**
 * Unconfirmed clients one machine may have from all addresses together; a newcomer beyond it makes
 * the oldest one leave (EVICTED_CLOSE), so a flood from many addresses cannot keep the owner out.
 */
export const MAX_PENDING_CLIENTS_PER_MACHINE = 64;

/** The close code of an unconfirmed client dropped to make room for a newer one. */
export const EVICTED_CLOSE = { code: 4429, reason: 'too many clients awaiting the machine' } as const;

/** Refused connects are logged once per address per window, with their count. */
export const REFUSAL_LOG_WINDOW_MS = 60_000;
/** Addresses a refusal log tracks at once; refusals from others are counted under `others`. */
export const MAX_REFUSAL_LOG_ADDRESSES = 1000;
