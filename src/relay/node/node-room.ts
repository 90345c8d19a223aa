import type { WebSocket } from 'ws';
import type { Logger } from '../../log/logger';
import { Room, type ClientSeat, type RoomHost, type Role } from '../room';

/** One socket of the Node relay, with the state the Worker keeps in tags and attachments. */
export class Peer {
  ended = false;
  lastSeen = Date.now();
  /** Answered the last protocol-level ping. */
  alive = true;

  readonly seat: ClientSeat;

  constructor(
    readonly ws: WebSocket,
    readonly role: Role,
    readonly cid: string,
    address: string,
  ) {
    this.seat = { address, opened: Date.now(), confirmed: false };
  }
}

/** A machine_id's sockets in memory, and the shared Room logic over them. */
export class NodeRoom implements RoomHost<Peer> {
  readonly room: Room<Peer>;
  private current: Peer | undefined;
  private readonly byCid = new Map<string, Peer>();

  constructor(log: Logger) {
    this.room = new Room(this, log);
  }

  addClient(peer: Peer): void {
    this.byCid.set(peer.cid, peer);
    this.room.clientOpened(peer);
  }

  setMachine(peer: Peer): void {
    const previous = this.current ? [this.current] : [];
    this.current = peer;
    this.room.machineOpened(peer, previous);
  }

  /** Every socket, for heartbeats and idle checks. */
  *peers(): Iterable<Peer> {
    if (this.current && !this.current.ended) yield this.current;
    yield* this.byCid.values();
  }

  get empty(): boolean {
    return !this.machine() && this.byCid.size === 0;
  }

  machine(): Peer | undefined {
    return this.current && !this.current.ended ? this.current : undefined;
  }
  client(cid: string): Peer | undefined {
    return this.byCid.get(cid);
  }
  clients(): Iterable<Peer> {
    return this.byCid.values();
  }
  roleOf(peer: Peer): Role {
    return peer.role;
  }
  cidOf(peer: Peer): string {
    return peer.cid;
  }
  seatOf(peer: Peer): ClientSeat {
    return peer.seat;
  }
  confirm(peer: Peer): void {
    peer.seat.confirmed = true;
  }
  send(peer: Peer, text: string): void {
    if (peer.ws.readyState === peer.ws.OPEN) peer.ws.send(text);
  }
  close(peer: Peer, code: number, reason: string): void {
    peer.ws.close(code, reason);
  }
  isEnded(peer: Peer): boolean {
    return peer.ended;
  }
  markEnded(peer: Peer): void {
    peer.ended = true;
    if (peer.role === 'client') this.byCid.delete(peer.cid);
  }
}
