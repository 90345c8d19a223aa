import { randomUUID } from 'node:crypto';
import { STATUS_CODES, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Logger } from '../../log/logger';
import { authTokenProblem } from '../auth';
import { addressKey, lastForwardedFor } from '../client-address';
import { JSON_HEADERS, errorAnswer, healthAnswer, incompleteRegister, notFound, notRegistered, parseRegisterBody, registeredAnswer, routeRequest, type RelayAnswer } from '../http';
import { IDLE_TIMEOUT_MS, MAX_CLIENT_FRAME_BYTES, MAX_CLIENTS_PER_MACHINE, MAX_REGISTER_BODY_BYTES, REFUSAL_LOG_WINDOW_MS } from '../limits';
import { RefusalLog } from '../refusal-log';
import type { Role } from '../room';
import { NodeRoom, Peer } from './node-room';
import { StaticFiles } from './static-files';

export interface NodeRelayOptions {
  authToken: string;
  /** Folder of the phone page (media/); absent: no static files. */
  staticDir?: string;
  log: Logger;
  /** Silence after which a socket is closed (docs/relay.md: 90 s). */
  idleTimeoutMs?: number;
  /** Clients one machine may have at once (docs/relay.md: 1024). */
  maxClientsPerMachine?: number;
  /** Interval of protocol-level pings (default: a third of the idle timeout, at most 30 s); a socket that leaves one unanswered is dropped. */
  pingIntervalMs?: number;
  /**
   * The relay runs behind a proxy that appends the client's address to X-Forwarded-For: per-address
   * limits count that address. Off (default): the socket's address, and X-Forwarded-For is ignored
   * (anyone can send one).
   */
  trustProxy?: boolean;
  /** Window of the refused-connects log lines (docs/relay.md: 60 s). */
  refusalLogWindowMs?: number;
}

/** Frames between the contract's limit and this are answered payload_too_large; larger ones ws refuses alone. */
const WS_MAX_PAYLOAD = 2 * MAX_CLIENT_FRAME_BYTES;

/** The self-hosted relay: routes of http.ts, one in-memory Room per machine_id, heartbeats. */
export class NodeRelay {
  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: WS_MAX_PAYLOAD, perMessageDeflate: false });
  private readonly rooms = new Map<string, NodeRoom>();
  private readonly registered = new Set<string>();
  private readonly statics: StaticFiles | undefined;
  private readonly idleTimeoutMs: number;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly refusals: RefusalLog;

  constructor(private readonly options: NodeRelayOptions) {
    const problem = authTokenProblem(options.authToken);
    if (problem) throw new Error(problem);
    this.statics = options.staticDir ? new StaticFiles(options.staticDir) : undefined;
    this.idleTimeoutMs = options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
    this.refusals = new RefusalLog(options.log, options.refusalLogWindowMs ?? REFUSAL_LOG_WINDOW_MS);
    this.server = createServer((req, res) => void this.onRequest(req, res));
    this.server.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket as Socket, head));
  }

  async listen(port: number, host = '127.0.0.1'): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const ping = setInterval(() => this.pingAll(), this.options.pingIntervalMs ?? Math.min(30_000, this.idleTimeoutMs / 3));
    const idle = setInterval(() => this.closeIdle(), Math.min(10_000, Math.max(50, this.idleTimeoutMs / 4)));
    const refusals = setInterval(() => this.refusals.flush(), Math.max(50, (this.options.refusalLogWindowMs ?? REFUSAL_LOG_WINDOW_MS) / 4));
    for (const timer of [ping, idle, refusals]) timer.unref();
    this.timers.push(ping, idle, refusals);
    return this.server.address() as AddressInfo;
  }

  /** Closes every socket (1001, so clients reconnect) and stops listening. */
  async close(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    this.refusals.flush();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const ws of this.wss.clients) ws.close(1001, 'relay shutting down');
    const grace = setTimeout(() => {
      for (const ws of this.wss.clients) ws.terminate();
      this.server.closeAllConnections();
    }, 2000);
    this.server.closeIdleConnections();
    await closed;
    clearTimeout(grace);
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const route = routeRequest(this.describe(req, false), this.options.authToken);
      if (route.kind === 'health') return send(res, healthAnswer());
      if (route.kind === 'answer') return send(res, route.answer);
      if (route.kind === 'register') return send(res, await this.register(req));
      if (route.kind === 'static' && (await this.statics?.serve(route.path, req, res))) return;
      send(res, route.kind === 'socket' ? errorAnswer('invalid_request', 'expected a WebSocket upgrade') : notFound());
    } catch (error) {
      this.options.log.error('relay.request_failed', { error: String(error) });
      send(res, errorAnswer('server_error', 'internal error'));
    }
  }

  private async register(req: IncomingMessage): Promise<RelayAnswer> {
    const declared = Number(req.headers['content-length']);
    if (declared > MAX_REGISTER_BODY_BYTES) return errorAnswer('payload_too_large', `body exceeds ${MAX_REGISTER_BODY_BYTES} bytes`);
    let text = '';
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        text += chunk.toString('utf8');
        if (text.length > MAX_REGISTER_BODY_BYTES) break;
      }
    } catch {
      // Node's "aborted": the connection closed before the body's end.
      return incompleteRegister(this.options.log, this.addressOf(req));
    }
    const parsed = parseRegisterBody(text);
    if ('answer' in parsed) return parsed.answer;
    this.registered.add(parsed.machineId);
    this.options.log.info('relay.registered', { machine_id: parsed.machineId });
    return registeredAnswer(parsed.machineId, this.publicOrigin(req));
  }

  private onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    // Node drops its own error listener from upgraded sockets; a reset peer must not crash the relay.
    socket.on('error', () => socket.destroy());
    const address = this.addressOf(req);
    const refuse = (answer: RelayAnswer) => {
      this.refusals.refused(address, answer);
      refuseUpgrade(socket, answer);
    };
    const route = routeRequest(this.describe(req, true), this.options.authToken);
    if (route.kind !== 'socket') return refuse(route.kind === 'answer' ? route.answer : notFound());
    const { role, machineId } = route;
    if (role === 'client' && !this.registered.has(machineId)) return refuse(notRegistered());
    if (role === 'client') {
      const refusal = this.rooms.get(machineId)?.room.admit(address, this.options.maxClientsPerMachine ?? MAX_CLIENTS_PER_MACHINE);
      if (refusal) return refuse(refusal);
    }
    // ws completes the upgrade synchronously (no verifyClient, no extensions): no other upgrade can
    // pass admission before this client is counted.
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, role, machineId, address));
  }

  /** Where a request comes from, as per-address limits count it. */
  private addressOf(req: IncomingMessage): string {
    const forwarded = this.options.trustProxy ? lastForwardedFor(req.headers['x-forwarded-for']) : undefined;
    return addressKey(forwarded ?? req.socket.remoteAddress);
  }

  private accept(ws: WebSocket, role: Role, machineId: string, address: string): void {
    let room = this.rooms.get(machineId);
    if (!room) {
      room = new NodeRoom(this.options.log.child({ machine_id: machineId }));
      this.rooms.set(machineId, room);
    }
    const peer = new Peer(ws, role, role === 'client' ? randomUUID() : '', address);
    const joined = room;
    ws.on('pong', () => (peer.alive = true));
    ws.on('message', (data: RawData, isBinary: boolean) => {
      peer.lastSeen = Date.now();
      joined.room.message(peer, isBinary ? toBuffer(data) : toBuffer(data).toString('utf8'));
    });
    ws.on('error', (error) => this.options.log.debug('relay.socket_error', { role, error: error.message }));
    ws.on('close', () => {
      joined.room.closed(peer);
      if (joined.empty && this.rooms.get(machineId) === joined) this.rooms.delete(machineId);
    });
    if (role === 'machine') {
      // A machine holding AUTH_TOKEN is registered by connecting, so clients find it after a relay restart.
      this.registered.add(machineId);
      room.setMachine(peer);
    } else {
      room.addClient(peer);
    }
  }

  private pingAll(): void {
    for (const room of this.rooms.values()) {
      for (const peer of room.peers()) {
        if (!peer.alive) {
          peer.ws.terminate();
          continue;
        }
        peer.alive = false;
        peer.ws.ping();
      }
    }
  }

  private closeIdle(): void {
    for (const room of this.rooms.values()) room.room.closeIdle([...room.peers()], (peer) => peer.lastSeen, this.idleTimeoutMs);
  }

  private describe(req: IncomingMessage, upgrade: boolean) {
    return {
      method: req.method ?? 'GET',
      url: new URL(req.url ?? '/', 'http://relay.invalid'),
      authorization: req.headers.authorization,
      upgrade: upgrade && (req.headers.upgrade ?? '').toLowerCase() === 'websocket',
    };
  }

  /** The origin clients use: the proxy's (X-Forwarded-*) when behind TLS, else the Host header. */
  private publicOrigin(req: IncomingMessage): string {
    const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value)?.split(',')[0].trim();
    const proto = first(req.headers['x-forwarded-proto']) === 'https' ? 'https' : 'http';
    const host = first(req.headers['x-forwarded-host']) || req.headers.host || '127.0.0.1';
    try {
      return new URL(`${proto}://${host}`).origin;
    } catch {
      const local = this.server.address() as AddressInfo;
      return `${proto}://127.0.0.1:${local.port}`;
    }
  }
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

function send(res: ServerResponse, answer: RelayAnswer): void {
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Refuses a WebSocket upgrade with an ordinary HTTP answer. */
function refuseUpgrade(socket: Socket, answer: RelayAnswer): void {
  const text = JSON.stringify(answer.body);
  socket.end(
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}
