import type { Logger } from '../log/logger';
import { tooManyClients, tooManyPending, type RelayAnswer } from './http';
import { clampCloseReason } from '../protocol/relay-frames';
import { closeFrame, dataFrame, openFrame, parseMachineFrame, relayErrorFrame, statusFrame, utf8LengthExceeds } from './frames';
import {
  CLIENT_FRAME_BURST,
  CLIENT_FRAMES_PER_SECOND,
  EVICTED_CLOSE,
  IDLE_CLOSE,
  MAX_CLIENT_FRAME_BYTES,
  MAX_PENDING_CLIENTS_PER_ADDRESS,
  MAX_PENDING_CLIENTS_PER_MACHINE,
  PING,
  PONG,
  REPLACED_CLOSE,
  TOO_BIG_CLOSE,
} from './limits';
import { TokenBucket } from './token-bucket';

export type Role = 'machine' | 'client';

/** What the relay knows of a client for its admission limits. */
export interface ClientSeat {
  /** addressKey of where it connected from. */
  address: string;
  /** When it connected (ms). */
  opened: number;
  /**
   * Its machine has sent it a frame. The machine's first frame to a client is the end-to-end welcome,
   * sent only to a key it knows or a valid pairing proof (docs/relay.md), so this is as much as the
   * relay can know of a client's authentication without reading the tunnel.
   */
  confirmed: boolean;
}

/**
 * What a deployment gives the room: its sockets and where their per-socket state lives (fields in
 * Node; tags and attachments in the Worker, whose memory is wiped when the Durable Object hibernates).
 */
export interface RoomHost<S> {
  /** The machine socket now serving the room: open and not ended. */
  machine(): S | undefined;
  client(cid: string): S | undefined;
  /** Every client socket that is not ended. */
  clients(): Iterable<S>;
  roleOf(socket: S): Role;
  /** A client socket's cid. */
  cidOf(socket: S): string;
  seatOf(client: S): ClientSeat;
  /** Records that the machine confirmed the client (its seat's `confirmed` becomes true). */
  confirm(client: S): void;
  send(socket: S, text: string): void;
  close(socket: S, code: number, reason: string): void;
  /** Whether the room is done with `socket` (closed by either side); set once by markEnded. */
  isEnded(socket: S): boolean;
  markEnded(socket: S): void;
}

/** A frame as a socket delivers it: text, or binary bytes. */
export type SocketMessage = string | ArrayBuffer | ArrayBufferView;

/**
 * One machine and its clients: the whole relay behaviour (docs/relay.md), shared by the Worker's
 * Durable Object and the Node relay. It keeps no state of its own that matters across a Durable Object
 * hibernation: the per-client rate buckets refill to full within the ~10 s of silence hibernation needs.
 */
export class Room<S> {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly host: RoomHost<S>,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether a new client from `address` may join: the refusal to answer it with, or undefined (then
   * room was made, by dropping the oldest unconfirmed client when the machine has too many).
   * Unconfirmed clients are capped per address and per machine, so a flood of connects that never
   * finish the handshake can neither fill the `maxClients` seats nor keep the owner's phone out.
   */
  admit(address: string, maxClients: number): RelayAnswer | undefined {
    let total = 0;
    let fromAddress = 0;
    const unconfirmed: S[] = [];
    for (const client of this.host.clients()) {
      if (this.host.isEnded(client)) continue;
      total += 1;
      const seat = this.host.seatOf(client);
      if (seat.confirmed) continue;
      unconfirmed.push(client);
      if (seat.address === address) fromAddress += 1;
    }
    if (total >= maxClients) return tooManyClients();
    if (fromAddress >= MAX_PENDING_CLIENTS_PER_ADDRESS) return tooManyPending();
    if (unconfirmed.length >= MAX_PENDING_CLIENTS_PER_MACHINE) {
      const oldest = unconfirmed.reduce((a, b) => (this.host.seatOf(b).opened < this.host.seatOf(a).opened ? b : a));
      this.log.info('relay.client_dropped', { reason: 'too many unconfirmed clients', address: this.host.seatOf(oldest).address });
      this.end(oldest, EVICTED_CLOSE.code, EVICTED_CLOSE.reason);
    }
    return undefined;
  }

  clientOpened(client: S): void {
    const machine = this.host.machine();
    this.host.send(client, statusFrame(machine !== undefined));
    if (machine) this.host.send(machine, openFrame(this.host.cidOf(client), this.host.seatOf(client).address));
  }

  /** A new machine socket, already the host's machine(); `previous` are the ones it replaces. */
  machineOpened(machine: S, previous: Iterable<S>): void {
    for (const old of previous) if (old !== machine) this.end(old, REPLACED_CLOSE.code, REPLACED_CLOSE.reason);
    for (const client of this.host.clients()) {
      this.host.send(machine, openFrame(this.host.cidOf(client), this.host.seatOf(client).address));
      this.host.send(client, statusFrame(true));
    }
  }

  message(socket: S, message: SocketMessage): void {
    if (this.host.isEnded(socket)) return;
    if (message === PING) return this.host.send(socket, PONG);
    if (this.host.roleOf(socket) === 'client') this.clientMessage(socket, message);
    else this.machineMessage(message);
  }

  /** The socket closed (either side, any reason); safe to call more than once. */
  closed(socket: S): void {
    if (this.host.isEnded(socket)) return;
    this.host.markEnded(socket);
    this.gone(socket, true);
  }

  /**
   * Closes the sockets silent for `idleMs` (lastSeen: their last frame, heartbeat included) and
   * returns when the next one would be due, or undefined when there are no sockets left.
   */
  closeIdle(sockets: Iterable<S>, lastSeen: (socket: S) => number, idleMs: number): number | undefined {
    const now = this.now();
    let next: number | undefined;
    for (const socket of sockets) {
      if (this.host.isEnded(socket)) continue;
      const due = lastSeen(socket) + idleMs;
      if (due <= now) this.end(socket, IDLE_CLOSE.code, IDLE_CLOSE.reason);
      else next = next === undefined ? due : Math.min(next, due);
    }
    return next;
  }

  private clientMessage(client: S, message: SocketMessage): void {
    const text = typeof message === 'string' ? message : undefined;
    const bytes = text === undefined ? (message as ArrayBuffer | ArrayBufferView).byteLength : 0;
    if (text === undefined ? bytes > MAX_CLIENT_FRAME_BYTES : utf8LengthExceeds(text, MAX_CLIENT_FRAME_BYTES)) {
      this.host.send(client, relayErrorFrame('payload_too_large', `frame exceeds ${MAX_CLIENT_FRAME_BYTES} bytes`));
      return this.end(client, TOO_BIG_CLOSE.code, TOO_BIG_CLOSE.reason);
    }
    const cid = this.host.cidOf(client);
    if (!this.bucketOf(cid).take()) {
      return this.host.send(client, relayErrorFrame('rate_limited', `more than ${CLIENT_FRAMES_PER_SECOND} frames a second; frame dropped`));
    }
    if (text === undefined) return this.host.send(client, relayErrorFrame('invalid_request', 'binary frames are not relayed; send text'));
    const machine = this.host.machine();
    if (!machine) return this.host.send(client, relayErrorFrame('not_found', 'the machine is offline; frame dropped'));
    this.host.send(machine, dataFrame(cid, text));
  }

  private machineMessage(message: SocketMessage): void {
    const frame = typeof message === 'string' ? parseMachineFrame(message) : undefined;
    if (!frame) {
      this.log.warn('relay.machine_frame_ignored', { binary: typeof message !== 'string' });
      return;
    }
    const client = this.host.client(frame.c);
    if (!client || this.host.isEnded(client)) return;
    if (frame.t === 'data') {
      if (!this.host.seatOf(client).confirmed) this.host.confirm(client);
      return this.host.send(client, frame.d);
    }
    // The machine asked for it, so it is not told the client went away.
    this.end(client, frame.code ?? 4000, clampCloseReason(frame.reason ?? ''), false);
  }

  /** Closes `socket` from the relay's side. */
  private end(socket: S, code: number, reason: string, notify = true): void {
    if (this.host.isEnded(socket)) return;
    this.host.markEnded(socket);
    try {
      this.host.close(socket, code, reason);
    } catch (error) {
      this.log.debug('relay.close_failed', { error: String(error) });
    }
    this.gone(socket, notify);
  }

  private gone(socket: S, notify: boolean): void {
    if (this.host.roleOf(socket) === 'client') {
      const cid = this.host.cidOf(socket);
      this.buckets.delete(cid);
      const machine = this.host.machine();
      if (machine && notify) this.host.send(machine, closeFrame(cid));
    } else if (!this.host.machine()) {
      // A replaced machine leaves a successor serving: clients hear nothing until it goes too.
      for (const client of this.host.clients()) this.host.send(client, statusFrame(false));
    }
  }

  private bucketOf(cid: string): TokenBucket {
    let bucket = this.buckets.get(cid);
    if (!bucket) {
      bucket = new TokenBucket(CLIENT_FRAMES_PER_SECOND, CLIENT_FRAME_BURST, this.now);
      this.buckets.set(cid, bucket);
    }
    return bucket;
  }
}
