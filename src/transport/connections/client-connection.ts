import { AuthCommand, envelopeWire, fail, helloOf, type CommandOf, ok, requestIdOf, type Envelope, type MeasuredText, type ResultOf, type ServiceEvent, wireText } from '../../protocol';
import { sourceText, type Source } from '../../protocol/sources';
import type { Logger } from '../../log/logger';
import type { OpenSession, SessionDoor } from '../../commands/door';
import { newSessionId, type ClientSession } from '../../commands/session';
import { Authenticator, type Principal } from '../auth/auth';
import type { LimitAddress } from '../auth/login-failures';
import { MAX_BODY_BYTES } from '../http/http-util';
import { version as SERVER_BUILD } from '../../../package.json';

export const AUTH_TIMEOUT_MS = 10_000;
export const CLOSE_AUTH_FAILED = 4401;
export const CLOSE_AUTH_TIMEOUT = 4408;
export const CLOSE_FORBIDDEN = 4403;
export const CLOSE_TOO_BIG = 1009;
export const CLOSE_SERVICE_STOPPING = 1001;
/** Too many failed logins from the client's address: try again after the window (docs/protocol.md). */
export const CLOSE_RATE_LIMITED = 4429;

export interface ClientConnectionDeps {
  auth: Authenticator;
  /** Where an authenticated client comes in (commands/door.ts): the dispatcher, the event hub, graceful stop. */
  door: SessionDoor;
  logger: Logger;
  authTimeoutMs?: number;
  /**
   * Whether the client's address is still allowed (`allow_from`, re-checked when service.json
   * changes). Only LAN sockets have one; relayed clients come through the relay.
   */
  addressAllowed?: (remoteAddress: string) => boolean;
  /** A client was let in (the audit log records a paired device's connection). */
  onAdmitted?: (session: ClientSession, paired: boolean) => void;
  /** How a session is named where it acts (commands/audit-actor.ts sessionLabel): the hello's `acting_as`. */
  labelOf?: (session: ClientSession) => string;
}

/** Longest delay setTimeout honours (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Where a session's frames go: a LAN WebSocket, or a relayed client's end-to-end tunnel. */
export interface FramePeer {
  /**
   * `shared`: the same text goes to other clients in this run (an event), not this client's alone (a
   * reply). A reply may come in measured parts (an export's piece, protocol/wire-text.ts `envelopeWire`).
   */
  send(text: string | MeasuredText, shared: boolean): void;
  close(code: number, reason: string): void;
  /** A relayed client's end-to-end key: a device paired over it is tied to it (revoking the device unregisters the key). */
  readonly clientKey?: string;
}

export interface ClientConnection {
  readonly id: string;
  /** One frame from the client: its text (undefined for a binary frame, or one too big to read) and its size in bytes. */
  receive(text: string | undefined, size: number): void;
  /** The transport is gone: stop the timers and the events. */
  closed(code?: number): void;
}

/**
 * One client session, whatever carries its frames: the auth handshake (first frame, within the
 * timeout), the 1 MiB frame limit, then commands dispatched concurrently, each answered once (with
 * its `id` echoed), plus the events of an authenticated session.
 */
export function openClientConnection(
  peer: FramePeer,
  /** The LAN or a relay: the session's source (its text in the log lines). */
  from: Extract<Source['kind'], 'lan' | 'relay'>,
  remoteAddress: string,
  deps: ClientConnectionDeps,
  /** What failed logins are counted against (login-failures.ts), when it is not `remoteAddress` (a relayed client). */
  limitAddress: LimitAddress = remoteAddress,
): ClientConnection {
  // The log's connection id from the first frame on, and the dispatcher's session id once authenticated.
  const id = newSessionId();
  const source = sourceText({ kind: from });
  const log = deps.logger.child({ connection: id, source });
  let principal: Principal | null = null;
  let admitted: OpenSession | undefined;
  let open = true;

  let expiryTimer: ReturnType<typeof setTimeout> | undefined;

  /** A reply: made for this client alone (a shared result's text is kept, an export piece's comes in measured parts: envelopeWire). */
  const send = (message: Envelope) => {
    if (open) peer.send(envelopeWire(message), false);
  };
  /** Events (tool arguments included) only go to a client whose credential is still good. */
  const sendEvent = (event: ServiceEvent) => {
    // The same event object goes to every follower: its text is made once (wireText).
    if (stillEntitled()) peer.send(wireText(event), true);
  };
  const closeWith = (code: number, reason: string) => {
    if (!open) return;
    peer.close(code, reason);
    closed(code);
  };

  const authTimer = setTimeout(() => {
    deps.auth.failures.noted(limitAddress, 'timeout', { connection: id, source });
    closeWith(CLOSE_AUTH_TIMEOUT, 'authentication timeout');
  }, deps.authTimeoutMs ?? AUTH_TIMEOUT_MS);

  /**
   * Closes the session (4401, or 4403 for an address no longer allowed) once what let it in is gone:
   * the token rotated or expired, the user removed, allow_from narrowed. True while it may go on.
   */
  const stillEntitled = (): boolean => {
    if (!open || !principal) return false;
    if (deps.addressAllowed && !deps.addressAllowed(remoteAddress)) {
      log.info('ws.address_no_longer_allowed', { address: remoteAddress });
      closeWith(CLOSE_FORBIDDEN, 'address no longer allowed');
      return false;
    }
    if (!deps.auth.isValid(principal)) {
      log.info('ws.credential_revoked', { address: remoteAddress, principal: principal.kind });
      closeWith(CLOSE_AUTH_FAILED, principal.kind === 'session' ? 'session ended' : Authenticator.deviceOf(principal) ? 'device revoked' : 'token revoked');
      return false;
    }
    return true;
  };

  /** A session token's socket closes when the token expires, whether or not the client says anything. */
  const closeAtExpiry = (expiresAt: number) => {
    expiryTimer = setTimeout(
      () => {
        if (Date.now() < expiresAt) closeAtExpiry(expiresAt);
        else stillEntitled();
      },
      Math.min(MAX_TIMER_MS, Math.max(0, expiresAt - Date.now())),
    );
    expiryTimer.unref();
  };

  /**
   * A pairing phone's `auth` with `pairing_secret`: the secret is spent for its own device credential,
   * which the hello hands back. Null when the secret is not live (or no device store).
   */
  const pairDevice = async (command: CommandOf<'auth'>) => {
    const devices = deps.auth.devices;
    if (!devices || !command.pairing_secret) return null;
    const paired = await devices.pair({ secret: command.pairing_secret, deviceId: command.device_id, deviceName: command.device_name, via: from, clientKey: peer.clientKey, address: remoteAddress });
    if (!paired) return null;
    log.info('ws.device_paired', { address: remoteAddress, device: paired.device_id });
    return { paired, principal: deps.auth.verify(paired.device_token) };
  };

  const authenticate = async (frame: unknown) => {
    const parsed = AuthCommand.safeParse(frame);
    const requestId = requestIdOf(frame);
    const offersSecret = parsed.success && parsed.data.token === undefined;
    // Counted before anything is checked; over the limit nothing is hashed or looked up, and a right
    // token is refused as well (as POST /auth does), so a guesser learns nothing while limited.
    const attempt = deps.auth.failures.begin(limitAddress, offersSecret ? 'pairing_secret' : 'token');
    if (attempt.retryAfterSeconds > 0) {
      send(fail('rate_limited', `too many failed logins; retry in ${attempt.retryAfterSeconds} s`, requestId));
      closeWith(CLOSE_RATE_LIMITED, 'too many failed logins');
      return;
    }
    let pairing: Awaited<ReturnType<typeof pairDevice>> = null;
    let candidate: Principal | null;
    try {
      pairing = parsed.success && offersSecret ? await pairDevice(parsed.data) : null;
      candidate = pairing ? pairing.principal : parsed.success ? deps.auth.verify(parsed.data.token) : null;
    } catch (error) {
      attempt.refund(); // The store failed, not the client: logged as ws.auth_crashed.
      throw error;
    }
    if (candidate) attempt.refund();
    else attempt.failed({ connection: id, source });
    if (!open) return;
    if (!candidate) {
      const why = !parsed.success ? 'the first message must be {"type":"auth","token":...}' : parsed.data.token === undefined ? 'invalid or spent pairing secret' : 'invalid token';
      send(fail('invalid_token', why, requestId));
      closeWith(CLOSE_AUTH_FAILED, 'authentication failed');
      return;
    }
    clearTimeout(authTimer);
    principal = candidate;
    const deviceId = Authenticator.deviceOf(candidate);
    if (candidate.kind === 'session') closeAtExpiry(candidate.expiresAt);
    admitted = deps.door.openSession({
      id,
      source: { kind: from },
      principal: candidate.kind,
      ...(deviceId ? { deviceId } : {}),
      ...(candidate.kind === 'session' ? { username: candidate.username } : {}),
      address: remoteAddress,
      canAnswerPermissions: true,
      send: sendEvent,
      recheck: () => void stillEntitled(),
      onClose: () => closeWith(CLOSE_SERVICE_STOPPING, 'service stopping'),
    });
    log.info('ws.authenticated', { address: remoteAddress, principal: candidate.kind, ...(deviceId ? { device: deviceId } : {}) });
    deps.onAdmitted?.(admitted.session, pairing !== null);
    const answer: ResultOf<'auth'> = {
      authenticated: true,
      expires_in: deps.auth.expiresIn(candidate),
      ...helloOf(parsed.data?.protocol, SERVER_BUILD),
      ...(pairing ? pairing.paired : {}),
      ...(deps.labelOf ? { acting_as: deps.labelOf(admitted.session) } : {}),
    };
    send(ok(answer, requestId));
  };

  const crashed = (error: unknown) => log.error('ws.handler_crashed', { error });
  const reply = (answer: Envelope) => {
    try {
      send(answer);
    } catch (error) {
      crashed(error);
    }
  };
  /** A command of the authenticated client: its credential checked again, then the door; its answer sent (no async wrapper: one promise less a command, issue 25). */
  const handle = (frame: unknown) => {
    if (principal && !deps.auth.isValid(principal)) {
      send(fail('invalid_token', principal.kind === 'session' ? 'session token expired or revoked' : 'token revoked', requestIdOf(frame)));
      stillEntitled();
      return;
    }
    admitted!.request(frame).then(reply, crashed);
  };

  const closed = (code?: number) => {
    if (!open) return;
    open = false;
    clearTimeout(authTimer);
    clearTimeout(expiryTimer);
    // A chat whose client left still finishes and is stored: the reply is in the history on reconnect.
    admitted?.close();
    // A connection that never got in says nothing more: its failed login is counted (login-failures.ts),
    // and a line per refused connection is what let a burst overwrite the log.
    if (principal) log.info('ws.closed', { code });
    else log.debug('ws.closed', { code });
  };

  /** While a pairing `auth` is spent (a store write), later frames wait for its answer. */
  let authenticating: Promise<void> | undefined;

  const receive = (text: string | undefined, size: number): void => {
    if (!open) return;
    if (authenticating) {
      void authenticating.then(() => receive(text, size));
      return;
    }
    if (size > MAX_BODY_BYTES) {
      send(fail('payload_too_large', `frame exceeds ${MAX_BODY_BYTES} bytes`));
      closeWith(CLOSE_TOO_BIG, 'frame too large');
      return;
    }
    let frame: unknown;
    if (text !== undefined) {
      try {
        frame = JSON.parse(text);
      } catch {
        frame = undefined;
      }
    }
    if (!principal) {
      authenticating = authenticate(frame)
        .catch((error) => {
          log.error('ws.auth_crashed', { error });
          closeWith(CLOSE_AUTH_FAILED, 'authentication failed');
        })
        .finally(() => {
          authenticating = undefined;
        });
      return;
    }
    if (text === undefined) return send(fail('invalid_request', 'binary frames are not accepted; send JSON text'));
    if (frame === undefined) return send(fail('invalid_request', 'frame is not valid JSON'));
    try {
      handle(frame);
    } catch (error) {
      crashed(error);
    }
  };

  return { id, receive, closed };
}
