import type { WebSocket, RawData } from 'ws';
import { AuthCommand, fail, ok, requestIdOf, type Envelope, type ServiceEvent } from '../protocol';
import type { Logger } from '../log/logger';
import type { Dispatch } from '../commands/dispatcher';
import type { EventHub } from '../commands/event-hub';
import { newSessionId, type ClientSession } from '../commands/session';
import type { Authenticator, Principal } from './auth';
import { MAX_BODY_BYTES } from './http-util';

export const AUTH_TIMEOUT_MS = 10_000;
export const CLOSE_AUTH_FAILED = 4401;
export const CLOSE_AUTH_TIMEOUT = 4408;
export const CLOSE_FORBIDDEN = 4403;
export const CLOSE_TOO_BIG = 1009;

export interface WsSessionDeps {
  auth: Authenticator;
  dispatch: Dispatch;
  events: EventHub;
  logger: Logger;
  /** Tracks work in flight so a graceful stop can wait for it. */
  track: <T>(work: Promise<T>) => Promise<T>;
  authTimeoutMs?: number;
}

/**
 * One WebSocket client: the auth handshake, then commands dispatched concurrently, each answered once
 * (with its `id` echoed), plus the events of an authenticated session.
 */
export function attachWsSession(socket: WebSocket, source: string, remoteAddress: string, deps: WsSessionDeps): void {
  const id = newSessionId();
  const log = deps.logger.child({ connection: id });
  let principal: Principal | null = null;
  let removeFromHub: (() => void) | undefined;

  const send = (message: Envelope | ServiceEvent) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
  };
  const session: ClientSession = { id, source, canAnswerPermissions: true, send };

  const closeWith = (code: number, reason: string) => {
    if (socket.readyState === socket.OPEN) socket.close(code, reason);
  };

  const authTimer = setTimeout(() => {
    log.info('ws.auth_timeout', { address: remoteAddress });
    closeWith(CLOSE_AUTH_TIMEOUT, 'authentication timeout');
  }, deps.authTimeoutMs ?? AUTH_TIMEOUT_MS);

  const authenticate = (frame: unknown) => {
    const parsed = AuthCommand.safeParse(frame);
    const candidate = parsed.success ? deps.auth.verify(parsed.data.token) : null;
    const requestId = requestIdOf(frame);
    if (!candidate) {
      log.warn('ws.auth_failed', { address: remoteAddress });
      send(fail('invalid_token', parsed.success ? 'invalid token' : 'the first message must be {"type":"auth","token":...}', requestId));
      closeWith(CLOSE_AUTH_FAILED, 'authentication failed');
      return;
    }
    clearTimeout(authTimer);
    principal = candidate;
    removeFromHub = deps.events.add(session);
    log.info('ws.authenticated', { address: remoteAddress, principal: candidate.kind });
    send(ok({ authenticated: true, expires_in: deps.auth.expiresIn(candidate) }, requestId));
  };

  const handle = async (frame: unknown) => {
    if (principal && !deps.auth.isValid(principal)) {
      send(fail('invalid_token', 'session token expired', requestIdOf(frame)));
      closeWith(CLOSE_AUTH_FAILED, 'token expired');
      return;
    }
    send(await deps.track(deps.dispatch(frame, session)));
  };

  socket.on('message', (data: RawData, isBinary: boolean) => {
    const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : (data as Buffer | ArrayBuffer).byteLength;
    if (size > MAX_BODY_BYTES) {
      send(fail('payload_too_large', `frame exceeds ${MAX_BODY_BYTES} bytes`));
      closeWith(CLOSE_TOO_BIG, 'frame too large');
      return;
    }
    let frame: unknown;
    if (!isBinary) {
      try {
        frame = JSON.parse(data.toString());
      } catch {
        frame = undefined;
      }
    }
    if (!principal) {
      authenticate(frame);
      return;
    }
    if (isBinary) return send(fail('invalid_request', 'binary frames are not accepted; send JSON text'));
    if (frame === undefined) return send(fail('invalid_request', 'frame is not valid JSON'));
    handle(frame).catch((error) => log.error('ws.handler_crashed', { error }));
  });

  let alive = true;
  socket.on('pong', () => (alive = true));
  const heartbeat = setInterval(() => {
    if (!alive) return socket.terminate();
    alive = false;
    socket.ping();
  }, 30_000);
  heartbeat.unref();

  socket.on('error', (error) => log.warn('ws.error', { error: error.message }));
  socket.on('close', (code) => {
    clearTimeout(authTimer);
    clearInterval(heartbeat);
    // A chat whose client left still finishes and is stored: the reply is in the history on reconnect.
    removeFromHub?.();
    log.info('ws.closed', { code });
  });
}
