/**
 * The one protocol client (docs/protocol.md): gives each command an id, matches the answers by id (in
 * any order), hands out events, does the `auth` handshake, times requests out and rejects those still
 * waiting when the connection closes. It knows no socket and no DOM: it writes text through a port and
 * is fed the text received, so the same code runs over the browser's WebSocket, the `ws` package and
 * the relay tunnel's wire (src/web/relay-wire.ts). Written without zod, importing the schemas as types
 * only, so the browser bundles can hold it (test/web-bundle.test.ts).
 */
import type { CommandInput } from './commands';
import type { EnvelopeOf } from './results';
import type { Envelope } from './envelope';
import type { ServiceEvent } from './events';
import { PROTOCOL_VERSION } from './version';

/** Where the client's frames go: one text per frame (a WebSocket's send, a tunnel's encoder...). */
export interface ClientPort {
  send(text: string): void;
}

export interface ProtocolClientOptions {
  /** Prefix of the ids the client chooses (`<prefix>-<n>`); unique per connection is enough. */
  idPrefix?: string;
  /** Default time a request may wait for its answer; none when absent. */
  timeoutMs?: number;
}

type Waiter = { resolve: (envelope: Envelope) => void; reject: (error: Error) => void };

/** A pairing phone's `auth` fields: the one-time secret, and its own id and name for the list of devices. */
export interface DevicePairingRequest {
  pairing_secret: string;
  device_id?: string;
  device_name?: string;
}

export class ProtocolClient<E = ServiceEvent> {
  private readonly eventListeners = new Set<(event: E) => void>();
  private readonly unmatchedListeners = new Set<(envelope: Envelope) => void>();
  /** Waiters per id, first sent first answered (a client may reuse an id; the service answers in turn). */
  private readonly pending = new Map<string, Waiter[]>();
  private counter = 0;
  private closedReason: string | undefined;

  constructor(
    private readonly port: ClientPort,
    private readonly options: ProtocolClientOptions = {},
  ) {}

  get isClosed(): boolean {
    return this.closedReason !== undefined;
  }

  /** A fresh request id, for callers that need it before sending (a chat, to cancel it). */
  newId(): string {
    return `${this.options.idPrefix ?? 'c'}-${++this.counter}`;
  }

  /**
   * Sends one command (with a fresh id unless it has one) and resolves with the envelope answering it,
   * typed by the command's result (protocol/results.ts). Rejects on timeout or when the connection closes.
   */
  request<C extends CommandInput>(frame: C, timeoutMs = this.options.timeoutMs): Promise<EnvelopeOf<C['type']>> {
    if (this.closedReason !== undefined) return Promise.reject(new Error(this.closedReason));
    const id = frame.id ?? this.newId();
    const key = String(id);
    const answer = new Promise<Envelope>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter: Waiter = {
        resolve: (envelope) => {
          if (timer !== undefined) clearTimeout(timer);
          resolve(envelope);
        },
        reject: (error) => {
          if (timer !== undefined) clearTimeout(timer);
          reject(error);
        },
      };
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          this.remove(key, waiter);
          reject(new Error(`no answer to ${frame.type} within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      this.pending.set(key, [...(this.pending.get(key) ?? []), waiter]);
    });
    try {
      this.port.send(JSON.stringify({ ...frame, id }));
    } catch (error) {
      this.settle(key, (waiter) => waiter.reject(error instanceof Error ? error : new Error(String(error))));
    }
    // The service answers each command with its own result (protocol/results.ts; test/service/protocol-results.test.ts).
    return answer as Promise<EnvelopeOf<C['type']>>;
  }

  /**
   * The handshake: the session's first frame, with a token, or a one-time pairing secret to spend for
   * this device's own credential (docs/protocol.md, "Devices"). Resolves with the service's answer (ok or refused).
   */
  authenticate(credential: string | DevicePairingRequest, timeoutMs?: number): Promise<EnvelopeOf<'auth'>> {
    const fields = typeof credential === 'string' ? { token: credential } : credential;
    // Our version, so a client from another build is told to update (the reply's `update`) instead of missing events.
    return this.request({ type: 'auth', ...fields, protocol: PROTOCOL_VERSION, id: `auth-${this.newId()}` }, timeoutMs);
  }

  /** Every event received. Returns an unsubscribe function. */
  onEvent(listener: (event: E) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  /** Responses no request of this client waits for (frames sent by other means, e.g. a chat view's own). */
  onUnmatched(listener: (envelope: Envelope) => void): () => void {
    this.unmatchedListeners.add(listener);
    return () => this.unmatchedListeners.delete(listener);
  }

  /**
   * One text received. Returns the parsed frame and whether it answered a request of this client, so a
   * caller can keep the rest (tests keep every other frame); undefined when the text is not a JSON object.
   */
  receive(text: string): { frame: Record<string, unknown>; answered: boolean } | undefined {
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      return undefined;
    }
    return this.receiveFrame(frame);
  }

  /** One frame received already parsed (a channel that carries objects, e.g. the webview's postMessage). */
  receiveFrame(frame: unknown): { frame: Record<string, unknown>; answered: boolean } | undefined {
    if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) return undefined;
    const record = frame as Record<string, unknown>;
    if (typeof record.event === 'string') {
      // The service's own frames: typed by the protocol, not re-checked (no zod in the browser).
      for (const listener of [...this.eventListeners]) safely(() => listener(record as E));
      return { frame: record, answered: false };
    }
    if (record.status !== 'ok' && record.status !== 'error') return { frame: record, answered: false };
    const envelope = record as unknown as Envelope;
    const answered = record.id !== undefined && this.settle(String(record.id), (waiter) => waiter.resolve(envelope));
    if (!answered) for (const listener of [...this.unmatchedListeners]) safely(() => listener(envelope));
    return { frame: record, answered };
  }

  /** Fails every request still waiting, without closing (e.g. the session starts over on the same socket). */
  failPending(reason: string): void {
    const waiting = [...this.pending.values()].flat();
    this.pending.clear();
    for (const waiter of waiting) waiter.reject(new Error(reason));
  }

  /** The connection is gone: pending requests fail with `reason`, and so do later ones. */
  closed(reason = 'the connection closed'): void {
    this.closedReason ??= reason;
    this.failPending(reason);
  }

  private settle(key: string, how: (waiter: Waiter) => void): boolean {
    const waiters = this.pending.get(key);
    const waiter = waiters?.shift();
    if (!waiter) return false;
    if (waiters!.length === 0) this.pending.delete(key);
    how(waiter);
    return true;
  }

  private remove(key: string, waiter: Waiter): void {
    const rest = (this.pending.get(key) ?? []).filter((w) => w !== waiter);
    if (rest.length === 0) this.pending.delete(key);
    else this.pending.set(key, rest);
  }
}

function safely(fn: () => void): void {
  try {
    fn();
  } catch (error) {
    console.error(error);
  }
}
