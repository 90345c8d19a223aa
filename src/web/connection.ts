/**
 * What the chat UI talks to: its connection to the service. The UI is written only against this
 * interface, so the same code runs in the editor's webview (postMessage to the extension) and on a phone
 * (a WebSocket to the service). Every wire type is the protocol's (src/protocol), imported as types
 * only: nothing here pulls zod into the browser bundle.
 */
import type { CommandInput, EditorLookup, EditorLookupResult, EnvelopeOf, HostAction, ViewEvent } from '../protocol';

export type ConnectionState = 'connecting' | 'open' | 'closed' | 'error';

export interface ConnectionStatus {
  state: ConnectionState;
  /** Shown to the user next to the state (e.g. "computer offline"); never holds a secret. */
  detail?: string;
  /** Closed and trying again: seconds until the next attempt (the countdown shown after the detail). */
  retryInSeconds?: number;
  /** From the hello: which side is older and must be updated (docs/protocol.md, "Protocol version"). */
  update?: 'client' | 'service';
  /**
   * The machine refused this page's key or credential (close 4401): only a new pairing helps. A relay can
   * forge the refusal, so the page still tries again, slowly; it offers "Pair again" meanwhile.
   */
  refused?: boolean;
}

export interface ServiceConnection {
  /**
   * Sends one protocol command and resolves with the envelope answering it (matched by `id`), typed by
   * the command's result schema (protocol/results.ts). A frame without `id` gets a fresh one. Rejects
   * when the connection drops before the answer.
   */
  request<C extends CommandInput>(frame: C): Promise<EnvelopeOf<C['type']>>;
  /** A fresh request id, for callers that need to know it before sending (a chat, to cancel it). */
  newId(): string;
  /** Every service event of this session. Returns an unsubscribe function. */
  onEvent(listener: (event: ViewEvent) => void): () => void;
  /** Connection state changes; the listener is called at once with the current state. */
  onState(listener: (state: ConnectionStatus) => void): () => void;
  readonly state: ConnectionStatus;
  /**
   * How the service names this client where it acts (the hello's `acting_as`; the editor's view is
   * `editor`): its own messages, conversations and answers are not labelled with it (web/sender-name.ts).
   */
  readonly actingAs?: string;
  /** Editor-only commands (Set API Key, Select Model, open a link...). Absent on the phone. */
  action?(name: HostAction, argument?: string): void;
  /** Questions only the editor answers (`#file` mentions). Absent on the phone. */
  lookup?(lookup: EditorLookup): Promise<EditorLookupResult>;
}

/**
 * Small shared plumbing for the implementations: listeners, ids and state. Requests and their answers
 * are the shared protocol client's (protocol/client.ts).
 */
export class ConnectionCore {
  private readonly eventListeners = new Set<(event: ViewEvent) => void>();
  private readonly stateListeners = new Set<(state: ConnectionStatus) => void>();
  private counter = 0;
  private readonly prefix = Math.random().toString(36).slice(2, 8);
  state: ConnectionStatus = { state: 'connecting' };

  newId(): string {
    return `ui-${this.prefix}-${++this.counter}`;
  }

  /** One service event of this session, to every listener. */
  emitEvent(event: ViewEvent): void {
    for (const listener of [...this.eventListeners]) safely(() => listener(event));
  }

  setState(next: ConnectionStatus): void {
    const same = next.state === this.state.state && next.detail === this.state.detail && next.retryInSeconds === this.state.retryInSeconds;
    if (same && next.update === this.state.update && next.refused === this.state.refused) return;
    this.state = next;
    for (const listener of [...this.stateListeners]) safely(() => listener(next));
  }

  onEvent(listener: (event: ViewEvent) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  onState(listener: (state: ConnectionStatus) => void): () => void {
    this.stateListeners.add(listener);
    safely(() => listener(this.state));
    return () => this.stateListeners.delete(listener);
  }
}

function safely(fn: () => void): void {
  try {
    fn();
  } catch (error) {
    console.error(error);
  }
}
