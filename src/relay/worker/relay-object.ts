import { addressKey } from '../client-address';
import { consoleLogger, levelOf } from '../console-logger';
import { notRegistered, positiveSetting } from '../http';
import { IDLE_TIMEOUT_MS, MAX_CLIENTS_PER_MACHINE, PING, PONG, REFUSAL_LOG_WINDOW_MS } from '../limits';
import { RefusalLog } from '../refusal-log';
import { Room, type ClientSeat, type Role, type RoomHost } from '../room';
import { answerResponse } from './responses';
import { WEBSOCKET_OPEN, autoResponse, newSocketPair, upgradeResponse, type DurableObjectState, type RelayEnv, type WorkerSocket } from './runtime';

/** What each socket carries through hibernation (serializeAttachment). */
interface SocketState {
  role: Role;
  cid: string;
  /** Last frame received, recorded at most every `seenStep` ms (a tenth of the idle timeout): writing it on every frame costs. */
  seen: number;
  ended: boolean;
  /** A client's admission facts (ClientSeat); a machine's are unused. */
  address: string;
  opened: number;
  confirmed: boolean;
}

const REGISTERED_KEY = 'registered';

/**
 * One machine_id's Durable Object: its machine socket and its clients, through the WebSocket
 * Hibernation API. Everything that must survive hibernation (~15 s idle wipes the object's memory)
 * lives in socket tags, attachments and storage; `states` is only a cache of the attachments.
 */
export class Relay implements RoomHost<WorkerSocket> {
  private readonly room: Room<WorkerSocket>;
  private readonly states = new WeakMap<WorkerSocket, SocketState>();
  /** The live sockets by role and cid: rebuilt from the runtime's list at every start, kept up to date after. */
  private current: WorkerSocket | undefined;
  private readonly byCid = new Map<string, WorkerSocket>();
  private readonly idleMs: number;
  private readonly seenStep: number;
  private readonly maxClients: number;
  private registered = false;
  /** Refused connects, logged per address and window; in memory, so a hibernation loses an open window's count. */
  private readonly refusals: RefusalLog;

  constructor(
    private readonly ctx: DurableObjectState,
    env: RelayEnv,
  ) {
    const log = consoleLogger(levelOf(env.LOG_LEVEL));
    this.room = new Room(this, log);
    this.idleMs = positiveSetting(env.IDLE_TIMEOUT_MS, IDLE_TIMEOUT_MS);
    this.maxClients = positiveSetting(env.MAX_CLIENTS_PER_MACHINE, MAX_CLIENTS_PER_MACHINE);
    this.seenStep = Math.max(1, Math.floor(this.idleMs / 10));
    this.refusals = new RefusalLog(log, positiveSetting(env.REFUSAL_LOG_WINDOW_MS, REFUSAL_LOG_WINDOW_MS));
    // Heartbeats are answered by the runtime without waking the object.
    ctx.setWebSocketAutoResponse(autoResponse(PING, PONG));
    for (const socket of ctx.getWebSockets()) this.index(socket);
    log.debug('relay.object_started', { sockets: ctx.getWebSockets().length });
  }

  /** Called by the Worker only, after it checked the route and (for machines) AUTH_TOKEN. */
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/register') {
      await this.register();
      return new Response(null, { status: 204 });
    }
    const role: Role = url.searchParams.get('role') === 'machine' ? 'machine' : 'client';
    if (role === 'client' && !(await this.isRegistered())) return answerResponse(notRegistered());
    // Cloudflare sets CF-Connecting-IP to the client's address (a client cannot choose it).
    const address = addressKey(request.headers.get('cf-connecting-ip'));
    if (role === 'client') {
      const refusal = this.room.admit(address, this.maxClients);
      if (refusal) {
        this.refusals.refused(address, refusal);
        await this.armAlarm(this.refusals.flush());
        return answerResponse(refusal);
      }
    }
    const [client, server] = newSocketPair();
    if (role === 'machine') {
      // A machine holding AUTH_TOKEN is registered by connecting.
      await this.register();
      const previous = this.ctx.getWebSockets('machine');
      this.accept(server, 'machine', '', address);
      this.room.machineOpened(server, previous);
    } else {
      const cid = crypto.randomUUID();
      this.accept(server, 'client', cid, address);
      this.room.clientOpened(server);
    }
    await this.armAlarm();
    return upgradeResponse(client);
  }

  webSocketMessage(socket: WorkerSocket, message: string | ArrayBuffer): void {
    const state = this.stateOf(socket);
    const now = Date.now();
    if (now - state.seen >= this.seenStep) this.save(socket, { ...state, seen: now });
    this.room.message(socket, message);
  }

  webSocketClose(socket: WorkerSocket, code: number, reason: string): void {
    this.room.closed(socket);
    try {
      // Completes the closing handshake where the runtime does not do it for us.
      socket.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
  }

  webSocketError(socket: WorkerSocket): void {
    this.room.closed(socket);
  }

  /** Closes the sockets silent for the idle timeout, then sleeps until the next one could be. */
  async alarm(): Promise<void> {
    const idle = this.room.closeIdle(this.ctx.getWebSockets(), (socket) => this.lastSeen(socket), this.idleMs);
    const refusals = this.refusals.flush();
    const next = Math.min(idle ?? Infinity, refusals ?? Infinity);
    if (next !== Infinity) await this.ctx.storage.setAlarm(next);
  }

  // RoomHost
  machine(): WorkerSocket | undefined {
    return this.current?.readyState === WEBSOCKET_OPEN ? this.current : undefined;
  }
  client(cid: string): WorkerSocket | undefined {
    return this.byCid.get(cid);
  }
  clients(): Iterable<WorkerSocket> {
    return [...this.byCid.values()];
  }
  roleOf(socket: WorkerSocket): Role {
    return this.stateOf(socket).role;
  }
  cidOf(socket: WorkerSocket): string {
    return this.stateOf(socket).cid;
  }
  seatOf(socket: WorkerSocket): ClientSeat {
    const { address, opened, confirmed } = this.stateOf(socket);
    return { address, opened, confirmed };
  }
  confirm(socket: WorkerSocket): void {
    this.save(socket, { ...this.stateOf(socket), confirmed: true });
  }
  send(socket: WorkerSocket, text: string): void {
    try {
      socket.send(text);
    } catch {
      // The socket closed meanwhile; its close event ends it.
    }
  }
  close(socket: WorkerSocket, code: number, reason: string): void {
    socket.close(code, reason);
  }
  isEnded(socket: WorkerSocket): boolean {
    return this.stateOf(socket).ended;
  }
  markEnded(socket: WorkerSocket): void {
    const state = this.stateOf(socket);
    this.save(socket, { ...state, ended: true });
    if (state.role === 'client') this.byCid.delete(state.cid);
    else if (this.current === socket) this.current = undefined;
  }

  private accept(socket: WorkerSocket, role: Role, cid: string, address: string): void {
    this.ctx.acceptWebSocket(socket, role === 'machine' ? ['machine'] : ['client', cid]);
    const now = Date.now();
    this.save(socket, { role, cid, seen: now, ended: false, address, opened: now, confirmed: false });
    this.index(socket);
  }

  private index(socket: WorkerSocket): void {
    const state = this.stateOf(socket);
    if (state.ended) return;
    if (state.role === 'client') this.byCid.set(state.cid, socket);
    else this.current = socket;
  }

  private stateOf(socket: WorkerSocket): SocketState {
    let state = this.states.get(socket);
    if (!state) {
      state = socket.deserializeAttachment() as SocketState;
      this.states.set(socket, state);
    }
    return state;
  }

  private save(socket: WorkerSocket, state: SocketState): void {
    socket.serializeAttachment(state);
    this.states.set(socket, state);
  }

  /** The latest a socket could have spoken: `seen` lags by up to one step, so this never closes early. */
  private lastSeen(socket: WorkerSocket): number {
    const heartbeat = this.ctx.getWebSocketAutoResponseTimestamp(socket)?.getTime() ?? 0;
    return Math.max(this.stateOf(socket).seen + this.seenStep, heartbeat);
  }

  /** Makes sure the alarm comes by `due` (default: one idle timeout from now, unless one is set). */
  private async armAlarm(due?: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (due === undefined) {
      if (current === null) await this.ctx.storage.setAlarm(Date.now() + this.idleMs);
    } else if (current === null || current > due) {
      await this.ctx.storage.setAlarm(due);
    }
  }

  private async isRegistered(): Promise<boolean> {
    if (!this.registered) this.registered = (await this.ctx.storage.get<boolean>(REGISTERED_KEY)) === true;
    return this.registered;
  }

  private async register(): Promise<void> {
    if (await this.isRegistered()) return;
    await this.ctx.storage.put(REGISTERED_KEY, true);
    this.registered = true;
  }
}
