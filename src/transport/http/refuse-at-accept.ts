import type { Server } from 'node:net';

/**
 * Refused connections reset in one turn of the event loop; the rest of an accept batch's wait for the next
 * turns (setImmediate), so a backlog's worth of refusals is not one stall between a chat's writes.
 */
export const RESETS_PER_TURN = 16;

/**
 * Accepted connections waiting for their reset, at most: each holds a descriptor until then. Past it (a
 * burst faster than the resets), a connection takes the plain way, a Socket the connection gate refuses
 * at once: dearer on the main thread, but it holds nothing.
 */
export const MAX_PENDING_RESETS = 256;

/** What this uses of the TCP handle Node's `net.Server` receives for each accepted connection. */
export interface AcceptedHandle {
  /** Fills `out.address` with the peer's address; returns 0 or an error code. */
  getpeername(out: { address?: string }): number;
  /** Closes with a reset (SO_LINGER 0); returns 0 or an error code. */
  reset(): number;
  close(): void;
}

interface ListeningHandle {
  onconnection: (error: number, accepted?: AcceptedHandle) => void;
}

/**
 * Resets a new connection whose address will be refused anyway (`refuses`, which counts the refusal)
 * before Node makes a `Socket` of it: the refused connection costs its accept, one `getpeername` and its
 * reset (with a Socket, its object, its stream state and its destroy too: about half the main thread's
 * time of a refusal, and most of a burst's garbage). Node offers no documented hook before the Socket, so
 * this wraps the listening handle's `onconnection` (lib/net.js gives it the accepted TCP handle); when
 * the handle is not as expected (another Node), it changes nothing and returns false: the connection gate
 * still refuses them, from their Socket. Call once the server listens. Nothing of a refused connection
 * is ever read: its handle is never started. Its reset may wait a few turns (RESETS_PER_TURN); past
 * MAX_PENDING_RESETS waiting, a refused connection is left to the gate.
 */
export function refuseAtAccept(server: Server, refuses: (remoteAddress: string) => boolean): boolean {
  const handle = (server as unknown as { _handle?: Partial<ListeningHandle> | null })._handle;
  const onconnection = handle?.onconnection;
  if (!handle || typeof onconnection !== 'function') return false;
  const resets = new ResetQueue(resetHandle);
  handle.onconnection = function (this: unknown, error: number, accepted?: AcceptedHandle) {
    // A full queue: the plain way (the gate asks `refuses` then, so the refusal is counted once).
    if (!error && accepted && !resets.full && typeof accepted.getpeername === 'function' && typeof accepted.reset === 'function') {
      const peer: { address?: string } = {};
      if (accepted.getpeername(peer) === 0 && peer.address && refuses(peer.address)) return resets.add(accepted);
    }
    onconnection.call(this, error, accepted);
  };
  return true;
}

/** Resets an accepted handle that was never started (refuseAtAccept's refusal). */
export function resetHandle(accepted: AcceptedHandle): void {
  // On a failed reset Node 20 marks the handle closing and the close below does nothing (the same gap
  // as net.Socket's resetAndDestroy); it is kept for a Node that leaves the handle open then. A failed
  // SO_LINGER setsockopt on an accepted TCP socket is not seen in practice on Linux.
  if (accepted.reset() !== 0) accepted.close();
}

/**
 * Refused connections to reset, RESETS_PER_TURN a turn of the event loop: accepted handles
 * (refuseAtAccept), or Sockets that waited at the connection gate (connection-gate.ts).
 */
export class ResetQueue<T> {
  private readonly pending: T[] = [];
  private scheduled = false;

  constructor(private readonly reset: (item: T) => void) {}

  /** Whether MAX_PENDING_RESETS wait already: the next refusal takes the plain way. */
  get full(): boolean {
    return this.pending.length >= MAX_PENDING_RESETS;
  }

  add(item: T): void {
    this.pending.push(item);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.resetSome());
  }

  /** Resets every one still waiting, now (the server stops). */
  flush(): void {
    for (const item of this.pending.splice(0)) this.reset(item);
  }

  private resetSome(): void {
    for (const item of this.pending.splice(0, RESETS_PER_TURN)) this.reset(item);
    if (this.pending.length > 0) setImmediate(() => this.resetSome());
    else this.scheduled = false;
  }
}
