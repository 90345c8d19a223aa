/**
 * The phone's end of the e2e tunnel through the relay (docs/relay.md): wait until the relay says the
 * machine is online, send the hello (with the pairing proof the first time), read the welcome, then
 * box every frame. When the machine comes back after being away, everything starts over.
 */
import { readRelayClientFrame } from '../protocol/relay-client-frame';
import type { RelayClientFrame } from '../protocol';
import { ClientHandshake, E2EError, type KeyPairText, type SecureChannel } from '../tunnel';
import type { Wire, WireEvent } from './wire';

export interface RelayWireOptions {
  keyPair: KeyPairText;
  machineKey: string;
  /** The one-time pairing secret, while this phone is not yet paired. */
  pairingSecret: () => string | undefined;
  /** The machine accepted this phone's key (the pairing secret is spent now): called on its first box that opens. */
  onPaired: () => void;
}

export class RelayWire implements Wire {
  readonly heartbeat = { everyMs: 25_000, silenceMs: 60_000 };
  private send: (text: string) => void = () => {};
  private handshake?: ClientHandshake;
  private channel?: SecureChannel;
  /**
   * A welcome was taken but no box of the machine's has opened yet. A welcome proves nothing (a relay
   * can write one): the pairing secret is dropped only once the machine's first box opens.
   */
  private unproven = false;

  constructor(private readonly options: RelayWireOptions) {}

  begin(sendRaw: (text: string) => void): boolean {
    this.send = sendRaw;
    this.handshake = undefined;
    this.channel = undefined;
    // The relay tells the machine's state first thing; the hello waits for "online".
    return false;
  }

  receive(text: string): WireEvent {
    if (text === 'pong') return { kind: 'ignore' };
    const relayFrame = readRelayClientFrame(text);
    // The relay's own frame (a `relay` field) of no known shape: never a tunnel frame; nothing to do.
    if (relayFrame === null) return { kind: 'ignore' };
    if (relayFrame) return this.onRelayFrame(relayFrame);
    try {
      if (this.channel) {
        const frame = this.channel.open(text);
        if (this.unproven) {
          this.unproven = false;
          this.options.onPaired();
        }
        return { kind: 'frame', text: frame };
      }
      if (this.handshake) {
        this.channel = this.handshake.complete(text);
        this.handshake = undefined;
        this.unproven = true;
        return { kind: 'ready' };
      }
    } catch (error) {
      this.channel = undefined;
      this.handshake = undefined;
      return { kind: 'broken', detail: error instanceof E2EError ? 'secure channel failed' : 'unexpected frame' };
    }
    return { kind: 'ignore' };
  }

  encode(text: string): string {
    if (!this.channel) throw new Error('the secure channel is not open');
    return this.channel.seal(text);
  }

  private onRelayFrame(frame: RelayClientFrame): WireEvent {
    switch (frame.relay) {
      case 'status':
        if (frame.machine === 'online') {
          this.channel = undefined;
          this.handshake = new ClientHandshake(this.options.keyPair, this.options.machineKey, this.options.pairingSecret());
          this.send(this.handshake.hello());
          return { kind: 'restart' };
        }
        this.channel = undefined;
        this.handshake = undefined;
        return { kind: 'down', detail: 'computer offline' };
      case 'error':
        return { kind: 'notice', detail: relayNotice(frame.code) };
    }
  }
}

/**
 * What the page says of a relay's error frame: its own words by the frame's code, never the frame's
 * text. The relay is not trusted with what the page tells the person (a lying relay's "session expired,
 * sign in again at …" would read as the page's own word); the codes are docs/relay.md's.
 */
export function relayNotice(code: string): string {
  switch (code) {
    case 'rate_limited':
      return 'the relay dropped a message: too many at once';
    case 'payload_too_large':
      return 'a message was too large for the relay';
    case 'not_found':
      return 'the computer is offline; a message was dropped';
    default:
      return 'the relay refused a message';
  }
}
