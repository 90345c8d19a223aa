import { KnownSecretsRedactor } from '../log/redact';
import { DeltaWindow } from '../protocol/delta-window';
import { TickBatch } from '../protocol/tick-batch';
import { helloOf, type EditorLookup, type EditorLookupResult, type HostAction, type HostToUi, type ResultOf, type ServiceEvent, type UiToHost, type ViewEvent } from '../protocol';
import { version as EXTENSION_BUILD } from '../../package.json';
import type { Backend, ViewChannel } from './backend';
import type { HostingState } from './hosting';

export type UiState = Extract<HostToUi, { kind: 'state' }>;

/** What the editor adds to the bridge beyond protocol frames (the chat input's chips). */
export interface EditorHooks {
  /** The view loaded and listens: what was kept for it can be posted now. */
  ready?(): void;
  /** Answers a `#file` question (protocol/bridge.ts, EditorLookup). */
  lookup?(lookup: EditorLookup): Promise<EditorLookupResult>;
}
export type PermissionRequestEvent = Extract<ServiceEvent, { event: 'permission.request' }>;

/** The UI's state line from the hosting state. */
export function uiStateOf(state: HostingState): UiState {
  switch (state.state) {
    case 'hosting':
      return { kind: 'state', state: 'running', detail: `port ${state.port}` };
    case 'client':
      return { kind: 'state', state: 'running', detail: `attached to another window's service (port ${state.port})` };
    case 'port_busy':
      return { kind: 'state', state: 'running', detail: `port ${state.port} is busy: only this editor can reach the assistant` };
    case 'starting':
      return { kind: 'state', state: 'starting' };
    case 'waiting':
      return { kind: 'state', state: 'starting', detail: state.detail };
    case 'stopped':
      return { kind: 'state', state: 'stopped' };
    case 'error':
      return { kind: 'state', state: 'error', detail: state.detail };
  }
}

/**
 * The chat webview's half of the bridge (protocol/bridge.ts): frames go to the service's one
 * dispatcher as this view's own session; its responses and events come back as posted messages.
 * Every posted message passes a last check that no secret the editor knows is in it.
 */
export class WebviewBridge {
  private channel: ViewChannel | undefined;
  private state: UiState = { kind: 'state', state: 'starting' };
  /**
   * Stream pieces go to the webview joined (DeltaWindow: every postMessage crosses the editor's process
   * boundary, compressed in remote windows). Also where the channel's come joined already (the service's
   * thread joins them before they cross its port): joined here as they arrive, a known secret split across
   * two pieces that came together (the extension host's loop was busy) is scrubbed whole, as before the
   * thread joined them (review28b: each half was posted as it was).
   */
  private readonly redactor = new KnownSecretsRedactor();
  private readonly deltas = new DeltaWindow((event) => this.outbox.push(this.scrub({ kind: 'event', event })));
  /**
   * What this view is sent within one turn of the extension host's loop goes as one post (TickBatch; a
   * batch of the service thread's port is taken in one task: a chat's end, its reply, row, turn.ended and
   * response, is one post). Each message is scrubbed as it is sent, with the secrets known then: a key the
   * editor forgets before the batch goes is still taken out of what was sent while it knew it.
   */
  private readonly outbox = new TickBatch<HostToUi>((messages) => this.post(messages.length === 1 ? messages[0] : { kind: 'batch', messages }));
  /** This view's chats still running: their frame id -> conversation (known once the first event names it). */
  private readonly running = new Map<string | number, string | undefined>();

  constructor(
    private readonly post: (message: HostToUi) => void,
    private readonly runAction: (action: HostAction, argument?: string) => void,
    private readonly secrets: () => string[],
    /**
     * A permission request of a chat this view is running: the editor's own question (the window
     * may prompt for it when the view is hidden). It comes on this view's channel after the chat's
     * tool.call, so the conversation is known by then.
     */
    private readonly onOwnRequest: (request: PermissionRequestEvent) => void = () => undefined,
    private readonly editor: EditorHooks = {},
  ) {}

  /** The backend changed (hosting started, attached elsewhere, stopped). */
  setBackend(backend: Backend | undefined, state: HostingState): void {
    if (this.channel) {
      // What the old session was asked will not be answered: let the UI fail it rather than wait.
      this.channel.dispose();
      this.send({ kind: 'state', state: 'stopped', detail: 'reconnecting to the service' });
    }
    this.running.clear();
    this.channel = backend?.openViewChannel({
      onResponse: (envelope) => {
        if (envelope.id !== undefined) this.running.delete(envelope.id);
        this.send({ kind: 'response', envelope });
      },
      onEvent: (event) => {
        this.follow(event);
        if (event.event === 'chat.delta') this.deltas.push(event);
        else this.send({ kind: 'event', event });
      },
    });
    this.setState(state);
  }

  setState(state: HostingState): void {
    this.state = uiStateOf(state);
    this.send(this.state);
  }

  postEvent(event: ViewEvent): void {
    this.send({ kind: 'event', event });
  }

  receive(message: unknown): void {
    if (!message || typeof message !== 'object') return;
    const m = message as UiToHost;
    switch (m.kind) {
      case 'ready':
        this.send(this.state);
        this.editor.ready?.();
        return;
      case 'lookup': {
        const { id, lookup } = m;
        if (typeof id !== 'string' || !lookup || typeof lookup !== 'object') return;
        const answer = this.editor.lookup ? this.editor.lookup(lookup) : Promise.resolve({ error: 'not available here' });
        void answer.then((result) => this.send({ kind: 'lookup_result', id, result }));
        return;
      }
      case 'action':
        this.runAction(m.action, m.argument);
        return;
      case 'frame': {
        const frame = m.frame;
        if (!frame || typeof frame !== 'object' || Array.isArray(frame)) {
          this.send({ kind: 'response', envelope: { status: 'error', code: 'invalid_request', error: 'a command must be a JSON object' } });
          return;
        }
        // The editor's view is already trusted: an auth frame is answered, not forwarded.
        if (frame.type === 'auth') {
          this.send({
            kind: 'response',
            envelope: {
              status: 'ok',
              data: { authenticated: true, expires_in: null, ...helloOf(typeof frame.protocol === 'number' ? frame.protocol : undefined, EXTENSION_BUILD) } satisfies ResultOf<'auth'>,
              ...(frame.id !== undefined ? { id: frame.id } : {}),
            },
          });
          return;
        }
        if (!this.channel) {
          this.send({ kind: 'response', envelope: { status: 'error', code: 'server_error', error: 'the assistant service is not running', ...(frame.id !== undefined ? { id: frame.id } : {}) } });
          return;
        }
        // A retried turn is this view's too (retry_turn names its conversation).
        if ((frame.type === 'chat' || frame.type === 'retry_turn') && frame.id !== undefined) this.running.set(frame.id, frame.conversation_id);
        this.channel.send(frame);
        return;
      }
    }
  }

  /** Learns which conversations this view's chats run in, and tells of their permission requests. */
  private follow(event: ServiceEvent): void {
    if ('id' in event && event.id !== undefined && this.running.has(event.id) && 'conversation_id' in event) this.running.set(event.id, event.conversation_id);
    if (event.event === 'permission.request' && [...this.running.values()].includes(event.conversation_id)) this.onOwnRequest(event);
  }

  /** Everything else keeps its order after the stream pieces before it. */
  private send(message: HostToUi): void {
    this.deltas.flush();
    this.outbox.push(this.scrub(message));
  }

  /** Known secrets only: chat text is shown as written, so nothing merely credential-shaped is hidden. */
  private scrub(message: HostToUi): HostToUi {
    return this.redactor.redact(message, this.secrets());
  }

  /** What was sent before goes (a view still shown gets it); the stream piece still pending is dropped. */
  dispose(): void {
    this.deltas.dispose();
    this.outbox.flush();
    this.channel?.dispose();
    this.channel = undefined;
  }
}
