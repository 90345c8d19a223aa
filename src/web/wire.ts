/**
 * What sits between the WebSocket and the service protocol. Directly on the LAN that is nothing; through
 * the relay it is the end-to-end tunnel (relay-wire.ts), which has its own handshake before `auth` and
 * its own notion of the machine being online.
 */
export type WireEvent =
  /** A service frame's text. */
  | { kind: 'frame'; text: string }
  /** The tunnel is up: the service session (auth) may start. */
  | { kind: 'ready' }
  /** The machine (re)connected and the tunnel is being set up again: any earlier session is gone. */
  | { kind: 'restart' }
  /** The machine is offline; the socket stays open, waiting for it. */
  | { kind: 'down'; detail: string }
  /** The tunnel broke (a frame failed to decrypt): drop the socket and start over. */
  | { kind: 'broken'; detail: string }
  /** Something to show briefly (e.g. the relay's rate limit); nothing else changes. */
  | { kind: 'notice'; detail: string }
  | { kind: 'ignore' };

export interface Wire {
  /** The socket is open. Returns true when the service session may start at once. */
  begin(sendRaw: (text: string) => void): boolean;
  receive(text: string): WireEvent;
  /** A service frame's text as it goes on the socket. */
  encode(text: string): string;
  /** Heartbeat for this wire: send `ping` this often; this long without a frame means the socket is dead. */
  readonly heartbeat?: { everyMs: number; silenceMs: number };
}

/** The LAN: frames as they are. */
export class PlainWire implements Wire {
  begin(): boolean {
    return true;
  }

  receive(text: string): WireEvent {
    return { kind: 'frame', text };
  }

  encode(text: string): string {
    return text;
  }
}
