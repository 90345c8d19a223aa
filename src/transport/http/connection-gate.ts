import type { Socket } from 'node:net';
import { loginLimitKey } from './allow-from';
import { ResetQueue } from './refuse-at-accept';

/**
 * Connections of one address (an IPv6 address by its /64, as logins are counted) read at once while
 * they are opening: not answered yet, or a WebSocket not authenticated yet. A browser opens six at most;
 * the rest of a burst waits unread, and once the address is over its failed-login limit the waiting
 * ones are closed unread.
 */
export const MAX_OPENING_PER_ADDRESS = 8;
/**
 * Connections let in and still opening, all addresses together, each for at most FRESH_MS: 600
 * connections at once are then read a few at a time between the service's other work (a chat's durable
 * writes), not in one stall. A connection that is slow to open stops counting here after FRESH_MS (it
 * still holds its address's place), so slow clients cannot hold the door shut.
 */
export const MAX_FRESH = 4;
export const FRESH_MS = 50;
/**
 * How long a connection may wait unread: as long as one let in may take to send its request's headers
 * (the server's headersTimeout), after which it is closed as that one would be. Its address's places may
 * be held by connections that send nothing (each closed only by that timeout), and a client that went
 * away while waiting is not seen until its socket is read: neither holds a socket here for longer.
 */
export const MAX_WAIT_MS = 30_000;
/** Connections one address may have waiting; past this its new ones are closed at once. */
export const MAX_WAITING_PER_ADDRESS = 256;
/**
 * Connections waiting, all addresses together; past this a new one is closed at once (as a full listen
 * backlog refuses it), unless another address has more waiting: its newest is closed instead.
 */
export const MAX_WAITING_CONNECTIONS = 2048;

/**
 * Closes a connection nothing of which was read with a reset: the client learns at once (a plain close
 * before the request was sent left Node's fetch waiting forever), and no TIME_WAIT is left behind.
 */
function refuse(socket: Socket): void {
  if (socket.destroyed) return;
  // Nothing listens to a waiting socket (the parser is attached when it is let in): a reset that fails emits
  // `error` (Node's _destroy), which unheard would take the process down (review19d).
  socket.on('error', ignoreError);
  socket.resetAndDestroy();
}

function ignoreError(): void {}

interface Address {
  key: string;
  /** Its connections being read that are still opening. */
  opening: number;
  /** Its connections accepted but not read yet, oldest first. */
  waiting: Socket[];
}

/**
 * What every new TCP connection goes through before a byte of it is read (the server accepts them
 * paused): refused at once when its address will be refused anyway (over its failed-login limit), else
 * let in a few at a time, addresses in turn, at most MAX_OPENING_PER_ADDRESS of an address at once.
 * The cheapest refusal is the one that parses nothing.
 */
export class ConnectionGate {
  private readonly addresses = new Map<string, Address>();
  /** Addresses with a connection waiting and a place free, in turn: a burst from one does not delay another. */
  private readonly ready = new Set<Address>();
  private readonly opening = new Map<Socket, Address>();
  /** Connections let in less than FRESH_MS ago and still opening, with when, oldest first. */
  private readonly fresh = new Map<Socket, number>();
  private waitingCount = 0;
  /** Every waiting connection with when it was accepted and its address, oldest first. */
  private readonly waitingSince = new Map<Socket, { since: number; address: Address }>();
  /** Wakes the gate when the oldest fresh connection stops counting, while others wait for it. */
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Closes the waiting connections that have waited waitMs. */
  private waitTimer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  /**
   * Waiting connections refused, reset a few a turn of the event loop (refuse-at-accept.ts's pace): an
   * address's lock comes with up to MAX_WAITING_PER_ADDRESS of its connections waiting, and resetting
   * them all in the run that saw it was one stall of 5-25 ms at load 6-9 (a one-address WebSocket burst:
   * docs/design.md, "... the one-address burst's refusals at the gate (s19, turn19d)").
   */
  private readonly refusals = new ResetQueue<Socket>(refuse);

  /**
   * `refuses`: whether a connection from this address is closed unread (it counts the refusal itself).
   * `reading`: called once for a connection let in, just before it is resumed (the server sets up its
   * HTTP parsing there, so a connection refused or still waiting costs none).
   * `waitMs`: how long a connection may wait (MAX_WAIT_MS; shorter in tests).
   */
  constructor(
    private readonly refuses: (remoteAddress: string) => boolean = () => false,
    private readonly reading: (socket: Socket) => void = () => undefined,
    private readonly now: () => number = () => performance.now(),
    private readonly waitMs = MAX_WAIT_MS,
  ) {}

  /** Connections accepted and not read yet. */
  get waiting(): number {
    return this.waitingCount;
  }

  /** A new connection, paused: nothing of it has been read. */
  accept(socket: Socket): void {
    const remoteAddress = socket.remoteAddress;
    if (this.closed || !remoteAddress || this.refuses(remoteAddress)) {
      refuse(socket);
      return;
    }
    const key = loginLimitKey(remoteAddress);
    const address = this.addresses.get(key) ?? { key, opening: 0, waiting: [] };
    if (address.waiting.length >= MAX_WAITING_PER_ADDRESS || (this.waitingCount >= MAX_WAITING_CONNECTIONS && !this.makeRoomFor(address))) {
      refuse(socket);
      return;
    }
    this.addresses.set(key, address);
    address.waiting.push(socket);
    this.waitingCount += 1;
    this.waitingSince.set(socket, { since: this.now(), address });
    this.settle(address);
    this.admit();
    this.expireWhenDue();
  }

  /**
   * The connection is open for good (answered once, authenticated, or closed): it no longer holds a
   * place. Later calls for the same socket do nothing.
   */
  opened(socket: Socket): void {
    const address = this.opening.get(socket);
    if (!address) return;
    this.opening.delete(socket);
    this.fresh.delete(socket);
    address.opening -= 1;
    this.settle(address);
    this.admit();
  }

  /** The server stops: waiting connections are closed (nothing of them was read), new ones refused. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    clearTimeout(this.waitTimer);
    this.waitTimer = undefined;
    this.ready.clear();
    for (const address of this.addresses.values()) {
      for (const socket of address.waiting.splice(0)) refuse(socket);
    }
    this.refusals.flush();
    this.waitingCount = 0;
    this.waitingSince.clear();
  }

  /**
   * Every waiting place is taken: the address with the most waiting gives up its newest, when it has at
   * least two more than `address` (a few addresses filling the places must not keep another one out; among
   * many addresses of one each, a newcomer resetting another's only connection would gain nothing). False: no room.
   */
  private makeRoomFor(address: Address): boolean {
    let longest: Address | undefined;
    for (const other of this.addresses.values()) if (!longest || other.waiting.length > longest.waiting.length) longest = other;
    if (!longest || longest.waiting.length <= address.waiting.length + 1) return false;
    const newest = longest.waiting.pop()!;
    this.refuseWaiting(newest);
    this.waitingCount -= 1;
    this.waitingSince.delete(newest);
    this.settle(longest);
    return true;
  }

  /** Keeps `address` in the turn while it has a connection waiting and a place free, and forgets it once it has neither. */
  private settle(address: Address): void {
    if (address.waiting.length > 0 && address.opening < MAX_OPENING_PER_ADDRESS) {
      if (!this.ready.has(address)) this.ready.add(address);
    } else {
      this.ready.delete(address);
    }
    if (address.waiting.length === 0 && address.opening === 0) this.addresses.delete(address.key);
  }

  private admit(): void {
    if (this.ready.size === 0) return;
    this.forgetStale();
    while (this.ready.size > 0 && this.fresh.size < MAX_FRESH) {
      const address: Address = this.ready.values().next().value!;
      // To the back of the turn (or out of it): the next admission is another address's.
      this.ready.delete(address);
      const socket = address.waiting.shift()!;
      this.waitingCount -= 1;
      this.waitingSince.delete(socket);
      // Checked again: the address may have gone over its limit while this connection waited.
      if (socket.destroyed || this.refuses(socket.remoteAddress!)) this.refuseWaiting(socket);
      else this.letIn(socket, address);
      this.settle(address);
    }
    if (this.ready.size > 0) this.wakeWhenStale();
  }

  /** Closes the connections that have waited waitMs or more, and wakes again for the next one due. */
  private expire(): void {
    const before = this.now() - this.waitMs;
    for (const [socket, { since, address }] of this.waitingSince) {
      if (since > before) break;
      this.waitingSince.delete(socket);
      address.waiting.splice(address.waiting.indexOf(socket), 1);
      this.waitingCount -= 1;
      this.refuseWaiting(socket);
      this.settle(address);
    }
    this.expireWhenDue();
  }

  /** A connection that waited is refused: in the reset queue, or at once when that is full (each waiting there holds a descriptor). */
  private refuseWaiting(socket: Socket): void {
    if (this.refusals.full) refuse(socket);
    else this.refusals.add(socket);
  }

  private expireWhenDue(): void {
    if (this.waitTimer || this.closed) return;
    const oldest = this.waitingSince.values().next().value;
    if (oldest === undefined) return;
    this.waitTimer = this.timerAt(oldest.since + this.waitMs, () => {
      this.waitTimer = undefined;
      this.expire();
    });
  }

  private letIn(socket: Socket, address: Address): void {
    address.opening += 1;
    this.opening.set(socket, address);
    this.fresh.set(socket, this.now());
    socket.once('close', () => this.opened(socket));
    this.reading(socket);
    socket.resume();
  }

  /** Fresh connections let in FRESH_MS ago or more stop counting against MAX_FRESH. */
  private forgetStale(): void {
    const before = this.now() - FRESH_MS;
    for (const [socket, since] of this.fresh) {
      if (since > before) break;
      this.fresh.delete(socket);
    }
  }

  private wakeWhenStale(): void {
    if (this.timer || this.closed) return;
    const oldest = this.fresh.values().next().value;
    if (oldest === undefined) return;
    this.timer = this.timerAt(oldest + FRESH_MS, () => {
      this.timer = undefined;
      this.admit();
    });
  }

  /** Runs `run` at `dueAt` on the gate's clock, without keeping the process alive. */
  private timerAt(dueAt: number, run: () => void): ReturnType<typeof setTimeout> {
    return setTimeout(run, Math.max(1, Math.ceil(dueAt - this.now()))).unref();
  }
}
