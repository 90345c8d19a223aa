/**
 * The phone's connection: a WebSocket to the service (directly or through the relay). Authenticates
 * with the `auth` frame first, and after any drop reconnects with jittered exponential backoff and
 * authenticates again. A refused key or token (close 4401) says to pair again, and a refused address (4403)
 * says so; both retry only after a long wait (a relay can send those closes too, and an address may be
 * allowed again, so neither stops the page for good).
 * Through the relay, a Wire (relay-wire.ts) carries the frames in the e2e tunnel, and the session starts
 * over whenever the machine comes back. Requests, answers and events are the shared protocol client's
 * (protocol/client.ts), one per service session.
 */
import type { CommandInput, EnvelopeOf, ViewEvent } from '../protocol';
import { ProtocolClient, type DevicePairingRequest } from '../protocol/client';
import { ConnectionCore, type ConnectionStatus, type ServiceConnection } from './connection';
import { PlainWire, type Wire } from './wire';

export interface WebSocketConnectionOptions {
  url: string;
  /** The device's credential ('' until a pairing secret was spent for it). */
  token: string;
  /** While the phone is not paired yet: the one-time secret (and its id and name) to spend in `auth`. */
  pairing?: () => DevicePairingRequest | undefined;
  /** The service gave this device its own credential (and its id there): keep it (the connection uses it from now on). */
  onDeviceToken?: (token: string, deviceId: string | undefined) => void;
  /** First retry delay; doubles per failed attempt up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** For tests; defaults to the browser's WebSocket. */
  createSocket?: (url: string) => WebSocket;
  /** A fresh wire per socket (default: frames as they are). */
  createWire?: () => Wire;
}

const CLOSE_INVALID_TOKEN = 4401;
const CLOSE_FORBIDDEN = 4403;
/** The machine refused the tunnel's hello (docs/relay.md): its reason tells an older service (e2e v1 only). */
const CLOSE_E2E_FAILED = 4400;
/**
 * How long the page waits before trying again a service that said it is older than the page, or refused
 * the phone's key or token. The relay passes any close code and reason on (and can forge them), so these
 * never stop the page for good, only slow it down.
 */
const REFUSED_RETRY_MS = 5 * 60_000;
const OLDER_SERVICE_HINT = "the computer's Remote Assistant is older than this page; update it there";
const UNKNOWN_KEY_HINT = 'this phone is not paired with the computer; scan a new pairing code';
const TOKEN_REFUSED_HINT = 'the pairing token was refused; pair again';
const NOT_ALLOWED_HINT = 'this device is not allowed to connect';

/** Whether a state's detail says the machine refused this phone's key or credential (close 4401): pair again. */
export function saysPairAgain(detail: string | undefined): boolean {
  return detail !== undefined && (detail.startsWith(UNKNOWN_KEY_HINT) || detail.startsWith(TOKEN_REFUSED_HINT));
}

export class WebSocketConnection implements ServiceConnection {
  private readonly core = new ConnectionCore();
  private socket: WebSocket | undefined;
  /** Lets go of the current socket at once (closing it with `code`), without waiting for its close event (set per socket in `connect`). */
  private abandonSocket: ((code?: number) => void) | undefined;
  /** The current service session's client, once `auth` was accepted. */
  private session: ProtocolClient<ViewEvent> | undefined;
  private attempts = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private countdown: ReturnType<typeof setInterval> | undefined;
  private stopped = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  /** What `auth` sends: the device's own credential once it has one. */
  private token: string;
  /** The hello's `acting_as`: how the service names this page where it acts. */
  actingAs: string | undefined;

  constructor(private readonly options: WebSocketConnectionOptions) {
    this.token = options.token;
    this.baseDelayMs = options.baseDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 10_000;
    // A phone that wakes up or gets its network back should not wait out a long backoff.
    if (typeof window !== 'undefined') {
      window.addEventListener('online', () => this.reconnectNow());
      // The network is gone: the socket's close handshake cannot finish (its close event may come only
      // after a long timeout, or never); drop it now so the page shows it is offline (typed messages wait
      // in the outbox) and reconnects as soon as the network is back.
      window.addEventListener('offline', () => this.dropNow());
      document.addEventListener('visibilitychange', () => {
        if (document.visibilityState === 'visible') this.retryNow();
      });
    }
    this.connect();
  }

  get state(): ConnectionStatus {
    return this.core.state;
  }

  newId(): string {
    return this.core.newId();
  }

  request<C extends CommandInput>(frame: C): Promise<EnvelopeOf<C['type']>> {
    const socket = this.socket;
    const session = this.session;
    if (this.core.state.state !== 'open' || !socket || socket.readyState !== WebSocket.OPEN || !session) {
      return Promise.reject(new Error('not connected'));
    }
    return session.request({ ...frame, id: frame.id ?? this.newId() });
  }

  onEvent(listener: Parameters<ServiceConnection['onEvent']>[0]): () => void {
    return this.core.onEvent(listener);
  }

  onState(listener: Parameters<ServiceConnection['onState']>[0]): () => void {
    return this.core.onState(listener);
  }

  /** Closes for good (e.g. the user forgets the pairing). */
  close(): void {
    this.stopped = true;
    this.clearTimers();
    this.session?.closed('closed');
    // Let go at once (its heartbeat too): a close handshake that never finishes leaves nothing running.
    this.abandonSocket?.(1000);
    this.core.setState({ state: 'closed', detail: 'disconnected' });
  }

  /** Skips the remaining backoff (after a network change, or the user taps "retry"). */
  retryNow(): void {
    if (this.stopped || this.retryTimer === undefined) return;
    this.clearTimers();
    this.connect();
  }

  /**
   * The network is back: skip the backoff, and start over an attempt that is not open yet (made while
   * the network was gone, it may hang until a long timeout). An open session is kept.
   */
  private reconnectNow(): void {
    if (this.stopped || this.core.state.state === 'open') return;
    if (this.retryTimer !== undefined) return this.retryNow();
    // Only an attempt still opening may hang. An open socket whose auth or tunnel is under way is kept: a
    // browser fires `online` spuriously, and a pairing secret is spent by the first auth (its answer holds
    // the device's credential; a second attempt with the spent secret would be refused: pair again).
    if (this.socket?.readyState !== WebSocket.CONNECTING) return;
    this.abandonSocket?.();
    this.connect();
  }

  /** The network is gone: let go of the socket now (pending requests fail), show it and retry with backoff. */
  private dropNow(): void {
    if (this.stopped || !this.socket) return;
    this.abandonSocket?.();
    this.clearTimers();
    this.scheduleRetry();
  }

  private connect(): void {
    if (this.stopped) return;
    this.core.setState({ state: 'connecting', detail: this.attempts > 0 ? 'reconnecting' : undefined });
    let socket: WebSocket;
    try {
      socket = this.options.createSocket ? this.options.createSocket(this.options.url) : new WebSocket(this.options.url);
    } catch {
      this.core.setState({ state: 'error', detail: 'invalid service address' });
      this.stopped = true;
      return;
    }
    this.socket = socket;
    const wire: Wire = this.options.createWire?.() ?? new PlainWire();
    let client: ProtocolClient<ViewEvent> | undefined;
    let lastHeard = Date.now();
    let heartbeat: ReturnType<typeof setInterval> | undefined;

    /** Ends the session on this socket (if any): its requests fail with `reason`. */
    const endSession = (reason: string) => {
      client?.closed(reason);
      if (this.session === client) this.session = undefined;
      client = undefined;
    };
    this.abandonSocket = (code) => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.abandonSocket = undefined;
      if (heartbeat !== undefined) clearInterval(heartbeat);
      endSession('connection lost');
      socket.close(code);
    };
    const startSession = () => {
      endSession('the session started over');
      const session = new ProtocolClient<ViewEvent>({ send: (text) => socket.send(wire.encode(text)) }, { idPrefix: this.newId() });
      client = session;
      session.onEvent((event) => {
        if (this.session === session) this.core.emitEvent(event);
      });
      session.authenticate(this.token ? this.token : (this.options.pairing?.() ?? this.token)).then(
        (answer) => {
          if (client !== session || answer.status !== 'ok') return; // A refusal is followed by close 4401, handled below.
          if (answer.data.device_token) {
            this.token = answer.data.device_token;
            this.options.onDeviceToken?.(answer.data.device_token, answer.data.device_id);
          }
          this.session = session;
          this.actingAs = answer.data.acting_as;
          this.attempts = 0;
          this.core.setState({ state: 'open', update: answer.data.update });
        },
        () => undefined, // The socket or session went first; handled where that happens.
      );
    };

    // An abandoned socket (dropNow, reconnectNow) may still open or deliver frames: they are not this connection's.
    socket.addEventListener('open', () => {
      if (this.socket !== socket) return;
      lastHeard = Date.now();
      if (wire.heartbeat) {
        const { everyMs, silenceMs } = wire.heartbeat;
        heartbeat = setInterval(() => {
          // Silence: the network is gone without telling (no close event will come in time either).
          if (Date.now() - lastHeard > silenceMs) return this.dropNow();
          socket.send('ping');
        }, everyMs);
      }
      if (wire.begin((text) => socket.send(text))) startSession();
      else this.core.setState({ state: 'connecting', detail: 'reaching computer' });
    });
    socket.addEventListener('message', (event) => {
      if (this.socket !== socket) return;
      lastHeard = Date.now();
      const received = wire.receive(String(event.data));
      switch (received.kind) {
        case 'ready':
          return startSession();
        case 'restart':
          endSession('the computer reconnected');
          return this.core.setState({ state: 'connecting', detail: 'securing' });
        case 'down':
          endSession('the computer went offline');
          return this.core.setState({ state: 'closed', detail: received.detail });
        case 'broken':
          return socket.close(4000, received.detail);
        case 'notice':
          if (this.session && this.session === client) this.core.setState({ state: 'open', detail: received.detail, update: this.core.state.update });
          return;
        case 'ignore':
          return;
      }
      client?.receive(received.text);
    });
    socket.addEventListener('close', (event) => {
      if (heartbeat !== undefined) clearInterval(heartbeat);
      endSession('connection lost');
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.abandonSocket = undefined;
      if (this.stopped) return;
      if (event.code === CLOSE_INVALID_TOKEN) {
        // If true, only a new pairing helps; if a lying relay says it, the pairing still works: wait long, never stop.
        const unknownKey = /unknown client key/i.test(event.reason);
        return this.scheduleRetry(REFUSED_RETRY_MS, unknownKey ? UNKNOWN_KEY_HINT : TOKEN_REFUSED_HINT, true);
      }
      // The service's allow_from no longer lists this address (it may again), or a lying relay says so: wait long, never stop.
      if (event.code === CLOSE_FORBIDDEN) return this.scheduleRetry(REFUSED_RETRY_MS, NOT_ALLOWED_HINT);
      if (event.code === CLOSE_E2E_FAILED && /unsupported e2e version/i.test(event.reason)) {
        // If true, retrying soon cannot help: the service speaks an older tunnel than this page (no forward
        // secrecy), which this page does not fall back to. A lying relay can say it too: wait long, never stop.
        return this.scheduleRetry(REFUSED_RETRY_MS, OLDER_SERVICE_HINT);
      }
      this.scheduleRetry();
    });
    // 'error' is always followed by 'close'; nothing to do here.
    socket.addEventListener('error', () => {});
  }

  /** `ceilingMs` replaces the backoff's own (a longer wait), `hint` is said before the countdown; `refused`: only a new pairing helps. */
  private scheduleRetry(ceilingMs?: number, hint?: string, refused = false): void {
    this.attempts += 1;
    const ceiling = ceilingMs ?? Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (this.attempts - 1));
    // Jitter (half to full delay) so many phones do not all come back at the same instant.
    const delay = Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
    const due = Date.now() + delay;
    const show = () => {
      const seconds = Math.max(1, Math.ceil((due - Date.now()) / 1000));
      this.core.setState({ state: 'closed', detail: hint, retryInSeconds: seconds, ...(refused ? { refused } : {}) });
    };
    show();
    this.countdown = setInterval(show, 1000);
    this.retryTimer = setTimeout(() => {
      this.clearTimers();
      this.connect();
    }, delay);
  }

  private clearTimers(): void {
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    if (this.countdown !== undefined) clearInterval(this.countdown);
    this.retryTimer = undefined;
    this.countdown = undefined;
  }
}
