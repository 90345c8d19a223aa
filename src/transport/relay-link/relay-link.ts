import WebSocket, { type RawData } from 'ws';
import { RelayToMachineFrame, parseFrame, type MachineFrame, type RelayLinkState, type RelayLinkStatus, type WebsocketChannel } from '../../protocol';
import { firstCodePoints, wellFormed } from '../../protocol/code-points';
import type { Logger } from '../../log/logger';
import type { ClientKeys } from './client-keys';
import type { ClientConnectionDeps } from '../connections/client-connection';
import type { MachineIdentity } from './machine-identity';
import { relayHttpOrigin, relaySocketUrl } from '../pairing/pairing-link';
import { RelayedClient } from './relayed-client';

export interface RelayLinkTiming {
  /** First retry delay; doubles per failed attempt up to `maxDelayMs`, with jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** `ping` to the relay this often; this long without any frame from it means the socket is dead. */
  pingEveryMs: number;
  silenceMs: number;
  /** Time for `POST /register` and for the socket's opening handshake. */
  requestTimeoutMs: number;
  /** Time a relayed client has to send its e2e hello. */
  handshakeTimeoutMs: number;
}

export const DEFAULT_RELAY_TIMING: RelayLinkTiming = {
  baseDelayMs: 1_000,
  maxDelayMs: 60_000,
  pingEveryMs: 25_000,
  silenceMs: 60_000,
  requestTimeoutMs: 10_000,
  handshakeTimeoutMs: 10_000,
};

/** Online this long, a link that drops is retried from the shortest delay again. */
const STABLE_LINK_MS = 10_000;

/** Machine frames can carry a client frame of up to 2 MiB, JSON-escaped (at most 6 characters a byte). */
const MACHINE_MAX_PAYLOAD = 16 * 1024 * 1024;

export interface RelayLinkDeps {
  channel: WebsocketChannel;
  identity: () => Promise<MachineIdentity>;
  clientKeys: ClientKeys;
  sessions: ClientConnectionDeps;
  logger: Logger;
  timing?: Partial<RelayLinkTiming>;
}

/**
 * The service's link to one relay (a `websocket` channel of service.json): `POST /register`, then the
 * machine socket. Any failure (relay down or restarting, network lost, laptop asleep, token refused)
 * is logged, shown in the status, and retried with jittered exponential backoff; nothing here throws
 * into the service or waits on it. Each relayed client becomes a RelayedClient (e2e tunnel + session).
 */
export class RelayLink {
  private state: RelayLinkState = 'connecting';
  private since = new Date();
  private lastError: string | null = null;
  private retryAt: Date | null = null;
  private socket?: WebSocket;
  private readonly clients = new Map<string, RelayedClient>();
  private attempts = 0;
  private retryTimer?: ReturnType<typeof setTimeout>;
  private heartbeat?: ReturnType<typeof setInterval>;
  private abort?: AbortController;
  private stopped = false;
  private readonly timing: RelayLinkTiming;
  private readonly log: Logger;

  constructor(private readonly deps: RelayLinkDeps) {
    this.timing = { ...DEFAULT_RELAY_TIMING, ...deps.timing };
    this.log = deps.logger.child({ component: 'relay-link', channel: deps.channel.name });
  }

  get channel(): WebsocketChannel {
    return this.deps.channel;
  }

  start(): void {
    void this.connect();
  }

  /** Closes the machine socket and every relayed session; no retry after this. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.clearTimers();
    this.abort?.abort();
    this.dropClients();
    const socket = this.socket;
    this.socket = undefined;
    if (socket && socket.readyState === WebSocket.OPEN) socket.close(1000, 'service stopping');
    else socket?.terminate();
    this.log.info('relay.link_stopped');
  }

  status(): RelayLinkStatus {
    return {
      name: this.deps.channel.name,
      url: this.deps.channel.url,
      state: this.state,
      since: this.since.toISOString(),
      last_error: this.lastError,
      clients: this.clients.size,
      retry_at: this.retryAt?.toISOString() ?? null,
    };
  }

  private setState(state: RelayLinkState, error?: string): void {
    if (error !== undefined) this.lastError = error;
    if (state === this.state) return;
    this.state = state;
    this.since = new Date();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.retryAt = null;
    this.setState('connecting');
    let identity: MachineIdentity;
    try {
      identity = await this.deps.identity();
      await this.register(identity.machineId);
    } catch (error) {
      return this.failed(describeFailure(error));
    }
    if (this.stopped) return;
    const socket = new WebSocket(relaySocketUrl(this.deps.channel.url, identity.machineId, 'machine'), {
      headers: { authorization: `Bearer ${this.deps.channel.auth_token}` },
      handshakeTimeout: this.timing.requestTimeoutMs,
      maxPayload: MACHINE_MAX_PAYLOAD,
      perMessageDeflate: false,
    });
    this.socket = socket;
    let lastHeard = Date.now();
    let openedAt: number | undefined;
    let failure: string | undefined;

    socket.on('unexpected-response', (_req, res) => {
      failure = `relay refused the machine socket: HTTP ${res.statusCode}${res.statusCode === 401 ? ' (wrong auth_token)' : ''}`;
      res.resume();
      socket.terminate();
    });
    socket.on('open', () => {
      openedAt = Date.now();
      this.lastError = null;
      this.setState('online');
      this.log.info('relay.online', { machine_id: identity.machineId });
      this.heartbeat = setInterval(
        () => {
          if (Date.now() - lastHeard > this.timing.silenceMs) {
            failure = `no frame from the relay for ${Math.round(this.timing.silenceMs / 1000)} s`;
            return socket.terminate();
          }
          if (socket.readyState === WebSocket.OPEN) socket.send('ping');
        },
        Math.min(this.timing.pingEveryMs, this.timing.silenceMs / 2),
      );
      this.heartbeat.unref?.();
    });
    socket.on('message', (data: RawData, isBinary: boolean) => {
      lastHeard = Date.now();
      if (!isBinary) this.onFrame(data.toString(), identity);
    });
    socket.on('error', (error) => {
      failure ??= describeFailure(error);
    });
    socket.on('close', (code, reason) => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.clearTimers();
      this.dropClients();
      if (this.stopped) return;
      // Backoff starts over only after a link that held: one the relay drops at once (another socket of
      // this machine_id replacing it, a relay in trouble) keeps backing off instead of flapping.
      if (openedAt !== undefined && Date.now() - openedAt >= STABLE_LINK_MS) this.attempts = 0;
      const why =
        failure ?? (code === 4409 ? 'replaced by another connection of this machine' : `relay closed the socket (${code}${reason.length ? ` ${firstCodePoints(reason.toString(), 80)}` : ''})`);
      this.failed(why);
    });
  }

  private async register(machineId: string): Promise<void> {
    this.abort = new AbortController();
    const timer = setTimeout(() => this.abort?.abort(), this.timing.requestTimeoutMs);
    try {
      const response = await fetch(`${relayHttpOrigin(this.deps.channel.url)}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.deps.channel.auth_token}` },
        body: JSON.stringify({ machine_id: machineId }),
        signal: this.abort.signal,
        redirect: 'error',
      });
      const body = (await response.json().catch(() => undefined)) as { code?: unknown } | undefined;
      if (!response.ok) {
        const code = typeof body?.code === 'string' ? ` ${firstCodePoints(wellFormed(body.code), 40)}` : '';
        throw new Error(`relay refused registration: HTTP ${response.status}${code}${response.status === 401 ? ' (wrong auth_token)' : ''}`);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  private failed(why: string): void {
    if (this.stopped) return;
    this.attempts += 1;
    const ceiling = Math.min(this.timing.maxDelayMs, this.timing.baseDelayMs * 2 ** Math.min(this.attempts - 1, 30));
    // Half to full delay: machines behind one relay that restarts do not all come back at once.
    const delay = Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
    this.retryAt = new Date(Date.now() + delay);
    this.setState('offline', why);
    this.log.warn('relay.offline', { error: why, retry_in_ms: delay, attempt: this.attempts });
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref?.();
  }

  private onFrame(text: string, identity: MachineIdentity): void {
    if (text === 'pong' || text === 'ping') return;
    const frame = parseFrame(RelayToMachineFrame, text);
    if (!frame) return this.log.warn('relay.bad_frame', { reason: 'not a relay frame' });
    const cid = frame.c;
    switch (frame.t) {
      case 'open':
        this.clients.get(cid)?.closed();
        this.clients.set(
          cid,
          new RelayedClient(cid, frame.a, {
            toRelay: (out) => this.send(out),
            identity,
            clientKeys: this.deps.clientKeys,
            sessions: this.deps.sessions,
            logger: this.deps.logger,
            via: this.deps.channel.name,
            handshakeTimeoutMs: this.timing.handshakeTimeoutMs,
          }),
        );
        return;
      case 'data':
        return this.clients.get(cid)?.receive(frame.d);
      case 'close':
        this.clients.get(cid)?.closed();
        this.clients.delete(cid);
        return;
    }
  }

  private send(frame: MachineFrame): void {
    if (frame.t === 'close') this.clients.delete(frame.c);
    const socket = this.socket;
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
  }

  private dropClients(): void {
    for (const client of this.clients.values()) client.closed();
    this.clients.clear();
  }

  private clearTimers(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.retryTimer = undefined;
    this.heartbeat = undefined;
  }
}

/** A failure in words for the log and the status: never the token (nothing here holds it). */
function describeFailure(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'AbortError') return 'relay did not answer in time';
    const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
    const code = typeof cause?.code === 'string' ? cause.code : (error as NodeJS.ErrnoException).code;
    if (error.message === 'fetch failed') return `relay unreachable${code ? ` (${code})` : ''}`;
    return `${firstCodePoints(error.message, 200)}${code && !error.message.includes(code) ? ` (${code})` : ''}`;
  }
  return 'relay connection failed';
}
