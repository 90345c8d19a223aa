import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocketServer } from 'ws';
import { IncompleteBody, ServiceError, fail, wireText } from '../../protocol';
import type { Logger } from '../../log/logger';
import { bodyIncompleteLog } from './body-incomplete-log';
import type { AddressFilter } from './allow-from';
import { CLOSE_FORBIDDEN } from '../connections/lan-socket';
import { clientAddress, noRoute, sendError, sendJson } from './http-util';
import { ConnectionGate } from './connection-gate';
import { refuseAtAccept } from './refuse-at-accept';

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;
/** Finds the handler of a request, or undefined (404). Resolved per request, so routes can change live. */
export type Router = (method: string, path: string) => RouteHandler | undefined;

/**
 * Connections the kernel holds for accept (Node's default is 511). libuv accepts every pending one in a
 * single callback, so a burst of 600 was one stall of 600 sockets made and refused; past 64 the kernel
 * drops the attempt and the client's TCP retries a second later, spreading a burst over time.
 */
const LISTEN_BACKLOG = 64;

/** Hard ceiling of a WebSocket frame; frames between 1 MiB and this get a payload_too_large answer first. */
const WS_HARD_MAX_PAYLOAD = 8 * 1024 * 1024;

export interface HttpServerOptions {
  router: Router;
  allowed: () => AddressFilter;
  /** `authenticated`: to call once the client has authenticated (its connection no longer counts as opening, connection-gate.ts). */
  onWebSocket: (socket: import('ws').WebSocket, req: IncomingMessage, authenticated: () => void) => void;
  logger: Logger;
  /** Seconds an address must wait after too many failed logins (0: it may try): its upgrades are refused before the handshake. */
  loginRefusedFor?: (remoteAddress: string) => number;
  /** Whether a new connection from this address is closed before anything is read (over its failed-login limit); it counts the refusal. */
  refusesConnection?: (remoteAddress: string) => boolean;
  /** How long a connection may wait at the gate unread (connection-gate.ts MAX_WAIT_MS; shorter in tests). */
  gateWaitMs?: number;
}

/** HTTP + WebSocket on one port; `allow_from` is checked before anything else is read. */
export class HttpServer {
  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: WS_HARD_MAX_PAYLOAD });
  private readonly sockets = new Set<Socket>();
  private readonly gate: ConnectionGate;
  private closed?: Promise<void>;
  /** Bodies cut short, logged grouped (body-incomplete-log.ts). */
  private readonly cuts: ReturnType<typeof bodyIncompleteLog>;
  /** Whether connections of a refused address are reset before a Socket is made of them (refuse-at-accept.ts), not by the gate. */
  refusesAtAccept = false;

  constructor(private readonly options: HttpServerOptions) {
    this.cuts = bodyIncompleteLog(options.logger);
    this.server = createServer((req, res) => void this.onRequest(req, res));
    // Accepted sockets start unread (net.Server's own option, which http.createServer does not pass
    // through): the gate decides when, and whether, each is read.
    (this.server as Server & { pauseOnConnect: boolean }).pauseOnConnect = true;
    // No Nagle setting at accept either (one system call per connection, refused ones too): it is set
    // on the connections let in.
    (this.server as Server & { noDelay: boolean }).noDelay = false;
    // http's own 'connection' listener (a parser, timeouts, its connection tracking: a third of what a
    // refused connection cost) runs only for a connection the gate lets in; Node documents handing a
    // socket to an HTTP server this way (its 'connection' event, "injected" connections).
    const [parseHttp, ...others] = this.server.listeners('connection') as ((socket: Socket) => void)[];
    if (!parseHttp || others.length > 0) throw new Error('http.Server was expected to have exactly one connection listener');
    this.server.removeListener('connection', parseHttp);
    this.gate = new ConnectionGate(
      options.refusesConnection,
      (socket) => {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.setNoDelay(true);
        parseHttp.call(this.server, socket);
      },
      undefined,
      options.gateWaitMs,
    );
    this.server.on('connection', (socket: Socket) => this.gate.accept(socket));
    this.server.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket as Socket, head));
    this.server.on('clientError', (_error, socket) => socket.destroy());
    this.server.headersTimeout = 30_000;
    this.server.requestTimeout = 60_000;
  }

  listen(port: number, host: string): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException) => {
        this.server.off('listening', onListening);
        reject(error);
      };
      const onListening = () => {
        this.server.off('error', onError);
        const refuses = this.options.refusesConnection;
        if (refuses) this.refusesAtAccept = refuseAtAccept(this.server, refuses);
        const address = this.server.address();
        resolve({ host, port: typeof address === 'object' && address ? address.port : port });
      };
      this.server.once('error', onError);
      this.server.once('listening', onListening);
      this.server.listen({ port, host, backlog: LISTEN_BACKLOG });
    });
  }

  /** Stops accepting connections; open ones (and their work in flight) go on until close(). */
  stopAccepting(): void {
    this.gate.close();
    if (!this.closed) this.closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
  }

  /** Closes WebSockets with 1001 (going away) and every remaining connection. */
  async close(): Promise<void> {
    this.stopAccepting();
    for (const client of this.wss.clients) client.close(1001, 'service stopping');
    this.server.closeIdleConnections();
    const deadline = setTimeout(() => {
      for (const socket of this.sockets) socket.destroy();
    }, 2_000);
    await this.closed;
    clearTimeout(deadline);
    // The open windows' counts are logged, not lost.
    this.cuts.flush();
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Answered once, the connection has opened: later requests on it are not the gate's.
    res.once('close', () => this.gate.opened(req.socket));
    if (!this.options.allowed()(req.socket.remoteAddress)) {
      req.resume();
      closeAfterRefusal(req.socket, res);
      return sendError(res, new ServiceError('unauthorized', 'address not allowed'));
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const handler = this.options.router(req.method ?? 'GET', url.pathname);
    if (!handler) {
      req.resume();
      return sendError(res, noRoute(req.method ?? 'GET', url.pathname));
    }
    try {
      await handler(req, res, url);
    } catch (error) {
      // The client's: the body cut short is counted once (grouped by address and path), without the error's stack or anything of the body.
      if (error instanceof IncompleteBody) this.cuts.record({ address: clientAddress(req), method: req.method ?? 'POST', path: url.pathname }, false);
      if (error instanceof ServiceError) return sendError(res, error);
      this.options.logger.error('http.handler_failed', { path: url.pathname, error });
      if (!res.headersSent) sendJson(res, 500, { status: 'error', error: 'internal error', code: 'server_error' });
      else res.destroy();
    }
  }

  private onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    // Node hands the socket over without its error listener: a client resetting while an answer is
    // written would be an uncaught exception that ends the service.
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/ws') {
      refuseRaw(socket, 'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const allowed = this.options.allowed()(socket.remoteAddress);
    // Its `auth` would be refused unchecked anyway: answer 429 before the WebSocket handshake's work.
    const wait = allowed ? (this.options.loginRefusedFor?.(clientAddress(req)) ?? 0) : 0;
    if (wait > 0) {
      const body = wireText(fail('rate_limited', `too many failed logins; retry in ${wait} s`));
      refuseRaw(socket, `HTTP/1.1 429 Too Many Requests\r\nRetry-After: ${wait}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      // A frame ws refuses (a reserved opcode, bad UTF-8, over the size limit) is an `error` event, after
      // which ws closes the socket itself: with no listener it would be an uncaught exception that ends
      // the service. A socket closed unheard (not allowed, or told the store's open failed or outlasted
      // the wait) would have none, so every socket gets one here.
      ws.on('error', () => undefined);
      if (!allowed) {
        ws.close(CLOSE_FORBIDDEN, 'address not allowed');
        return;
      }
      this.options.onWebSocket(ws, req, () => this.gate.opened(socket));
    });
  }
}

/** How long a socket refused by allow_from may take to take its answer before it is destroyed. */
const REFUSED_CLOSE_MS = 5_000;

/** Refused sockets whose close after REFUSED_CLOSE_MS is armed. */
const closingRefused = new WeakSet<Socket>();

/**
 * A refused address gets one answer and the connection closes: `Connection: close` stops the requests
 * it pipelined after this one, and a client that never reads (its side half-closed, or not) cannot keep
 * the socket past REFUSED_CLOSE_MS. No timeout of the server applies once a request is answered: a
 * client refused 20,000 times in one write held its socket for good.
 */
function closeAfterRefusal(socket: Socket, res: ServerResponse): void {
  res.shouldKeepAlive = false;
  // Requests pipelined in one write are all parsed, each refused here: one timer and one listener per
  // socket, not per request (hundreds of them, and Node's MaxListeners warning).
  if (closingRefused.has(socket)) return;
  closingRefused.add(socket);
  const timer = setTimeout(() => socket.destroy(), REFUSED_CLOSE_MS).unref();
  socket.once('close', () => clearTimeout(timer));
}

/**
 * Answers an upgrade on its raw socket and closes it once written: the server allows half-open sockets
 * and an upgraded one has no timeout, so a client that never closed its side held the socket, and its
 * address's place at the connection gate, for good.
 */
function refuseRaw(socket: Socket, answer: string): void {
  socket.end(answer, () => socket.destroy());
}
