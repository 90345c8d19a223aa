import type { WebSocket, RawData } from 'ws';
import { envelopeText, fail, ServiceError } from '../../protocol';
import type { LimitAddress } from '../auth/login-failures';
import { MAX_BODY_BYTES } from '../http/http-util';
import { openClientConnection, type ClientConnectionDeps } from './client-connection';
import { textSender } from './ws-frames';

export { AUTH_TIMEOUT_MS, CLOSE_AUTH_FAILED, CLOSE_AUTH_TIMEOUT, CLOSE_FORBIDDEN, CLOSE_TOO_BIG } from './client-connection';
export type LanSocketDeps = ClientConnectionDeps;
/** The service could not open (RFC 6455: an unexpected condition). */
export const CLOSE_OPEN_FAILED = 1011;
/** The service is still opening: try again later (RFC 6455's registry). */
export const CLOSE_TRY_AGAIN = 1013;

/**
 * A LAN WebSocket client: its frames feed one client connection (client-connection.ts); the server pings
 * it. `limitAddress`: what its failed logins count against, when not its address (a browser's socket,
 * auth/browser-origins.ts).
 */
export function attachLanSocket(socket: WebSocket, remoteAddress: string, deps: LanSocketDeps, limitAddress: LimitAddress = remoteAddress): void {
  const frames = openClientConnection(
    {
      send: textSender(socket),
      close: (code, reason) => {
        if (socket.readyState === socket.OPEN) socket.close(code, reason);
      },
    },
    'lan',
    remoteAddress,
    deps,
    limitAddress,
  );

  socket.on('message', (data: RawData, isBinary: boolean) => {
    const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : (data as Buffer | ArrayBuffer).byteLength;
    frames.receive(isBinary || size > MAX_BODY_BYTES ? undefined : data.toString(), size);
  });

  let alive = true;
  socket.on('pong', () => (alive = true));
  const heartbeat = setInterval(() => {
    if (!alive) return socket.terminate();
    alive = false;
    socket.ping();
  }, 30_000);
  heartbeat.unref();

  socket.on('error', (error) => deps.logger.warn('ws.error', { connection: frames.id, error: error.message }));
  socket.on('close', (code) => {
    clearInterval(heartbeat);
    frames.closed(code);
  });
}

/**
 * A LAN WebSocket accepted while the service opens its store: it is not read (paused: its frames wait
 * in the socket, so a client holds no memory of ours) until `open` resolves, then attached as any
 * other, its frames in the order sent (the auth timeout starts then). Frames the WebSocket had already
 * parsed from the bytes read with the handshake are kept and handed over first. When the open fails
 * or outlasts the wait, the client hears why (`server_error`) and the socket closes (1011 / 1013).
 */
export function attachLanSocketWhenOpen(socket: WebSocket, open: () => Promise<unknown>, attach: () => void): void {
  const early: [RawData, boolean][] = [];
  const keep = (data: RawData, isBinary: boolean) => early.push([data, isBinary]);
  socket.on('message', keep);
  socket.pause();
  open().then(
    () => {
      socket.off('message', keep);
      if (socket.readyState !== socket.OPEN) return;
      attach();
      for (const [data, isBinary] of early) socket.emit('message', data, isBinary);
      socket.resume();
    },
    (error: unknown) => {
      socket.off('message', keep);
      if (socket.readyState !== socket.OPEN) return;
      const failure = error instanceof ServiceError ? error : new ServiceError('server_error', String(error));
      // ws itself sends it, so it goes before the close frame that follows.
      socket.send(envelopeText(fail(failure.code, failure.message)));
      // Read again: the closing handshake needs the client's close frame (what it sends meanwhile goes unheard).
      socket.resume();
      socket.close(failure.retryAfterSeconds ? CLOSE_TRY_AGAIN : CLOSE_OPEN_FAILED, failure.retryAfterSeconds ? 'service still opening' : 'service could not open');
    },
  );
}
