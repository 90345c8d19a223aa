/**
 * The webview's connection: protocol frames go to the extension with postMessage (protocol/bridge.ts),
 * which hands them to the service's dispatcher and posts back the envelope and this view's events.
 * Requests and answers are the shared protocol client's (protocol/client.ts).
 */
import type { CommandInput, EditorLookup, EditorLookupResult, EnvelopeOf, HostAction, HostState, HostToUi, UiToHost, ViewEvent } from '../protocol';
import { ProtocolClient } from '../protocol/client';
import { ConnectionCore, type ConnectionStatus, type ServiceConnection } from './connection';

/** What `acquireVsCodeApi()` returns (only what we use). */
export interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

const HOST_STATES: Record<HostState, ConnectionStatus['state']> = {
  starting: 'connecting',
  running: 'open',
  stopped: 'closed',
  error: 'error',
};

export class PostMessageConnection implements ServiceConnection {
  private readonly core = new ConnectionCore();
  /** The editor's own session, as the service names it (commands/audit-actor.ts). */
  readonly actingAs = 'editor';
  /** Lookups waiting for the extension's answer, by id. */
  private readonly lookups = new Map<string, (result: EditorLookupResult) => void>();
  // postMessage carries objects: the client's text goes back to the frame it was (protocol/bridge.ts).
  private readonly client = new ProtocolClient<ViewEvent>({ send: (text) => this.post({ kind: 'frame', frame: JSON.parse(text) as CommandInput }) });

  constructor(
    private readonly vscode: VsCodeApi = acquireVsCodeApi(),
    target: Pick<Window, 'addEventListener'> = window,
  ) {
    this.client.onEvent((event) => this.core.emitEvent(event));
    target.addEventListener('message', (event: Event) => this.receive((event as MessageEvent).data));
    this.post({ kind: 'ready' });
  }

  get state(): ConnectionStatus {
    return this.core.state;
  }

  newId(): string {
    return this.core.newId();
  }

  request<C extends CommandInput>(frame: C): Promise<EnvelopeOf<C['type']>> {
    return this.client.request({ ...frame, id: frame.id ?? this.newId() });
  }

  onEvent(listener: Parameters<ServiceConnection['onEvent']>[0]): () => void {
    return this.core.onEvent(listener);
  }

  onState(listener: Parameters<ServiceConnection['onState']>[0]): () => void {
    return this.core.onState(listener);
  }

  action(name: HostAction, argument?: string): void {
    this.post(argument === undefined ? { kind: 'action', action: name } : { kind: 'action', action: name, argument });
  }

  lookup(lookup: EditorLookup): Promise<EditorLookupResult> {
    const id = this.newId();
    return new Promise((resolve) => {
      this.lookups.set(id, resolve);
      this.post({ kind: 'lookup', id, lookup });
    });
  }

  /** The webview's own persisted state (survives the view being hidden). */
  get api(): VsCodeApi {
    return this.vscode;
  }

  private post(message: UiToHost): void {
    this.vscode.postMessage(message);
  }

  private receive(data: unknown): void {
    if (data === null || typeof data !== 'object') return;
    const message = data as HostToUi;
    switch (message.kind) {
      case 'batch':
        if (Array.isArray(message.messages)) for (const one of message.messages) this.receive(one);
        break;
      case 'response':
        this.client.receiveFrame(message.envelope);
        break;
      case 'event':
        this.client.receiveFrame(message.event);
        break;
      case 'lookup_result':
        this.lookups.get(message.id)?.(message.result);
        this.lookups.delete(message.id);
        break;
      case 'state': {
        const state = HOST_STATES[message.state] ?? 'error';
        // A stopped service will not answer what it was asked; the UI must not wait forever.
        if (state === 'closed' || state === 'error') this.client.failPending(`the service is ${message.state}`);
        this.core.setState({ state, detail: message.detail });
        break;
      }
    }
  }
}
