import type { WebSocket, RawData } from 'ws';
import { MAX_BODY_BYTES } from '../http/http-util';
import { openClientConnection, type ClientConnectionDeps } from './client-connection';
import { textSender } from './ws-frames';

export { AUTH_TIMEOUT_MS, CLOSE_AUTH_FAILED, CLOSE_AUTH_TIMEOUT, CLOSE_FORBIDDEN, CLOSE_TOO_BIG } from './client-connection';
export type LanSocketDeps = ClientConnectionDeps;

/** A LAN WebSocket client: its frames feed one client connection (client-connection.ts); the server pings it. */
export function attachLanSocket(socket: WebSocket, remoteAddress: string, deps: LanSocketDeps): void {
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
