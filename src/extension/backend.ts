import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import { publicConfigOf } from '../config/public-config';
import { requestIdOf, type CommandInput, type Envelope, type PublicConfig, type ResultOf, type ServiceConfig, type ServiceEvent } from '../protocol';
import { ProtocolClient } from '../protocol/client';

export type { PublicConfig } from '../protocol';

type Frame = Record<string, unknown>;
export type { Envelope } from '../protocol';

export interface BackendEvents {
  /** A service event for the editor (config.changed, permission.request, ...). */
  event: [event: ServiceEvent];
  /** The public config changed (after a config.changed, from any source). */
  config: [config: PublicConfig, fields: string[]];
  /** A remote backend lost its connection. */
  closed: [];
}

/**
 * How this window reaches the service: in process when it hosts it, over a loopback WebSocket when
 * another window does. Commands, the status bar and the chat view only use this, so they behave the
 * same in every window.
 */
export interface Backend extends EventEmitter<BackendEvents> {
  readonly kind: 'local' | 'remote';
  /** One protocol command (as a WebSocket client would send it) -> its envelope. */
  request(frame: Frame): Promise<Envelope>;
  /** The last known public config (refreshed on every config change). */
  readonly config: PublicConfig | undefined;
  /** A chat view's channel (a session of the service, through its door): events for that view only plus broadcasts. */
  openViewChannel(sink: ViewSink): ViewChannel;
  dispose(): void;
}

/** One chat view's session: frames in, every response and event of that session out. */
export interface ViewChannel {
  send(frame: Frame): void;
  dispose(): void;
}

export interface ViewSink {
  onResponse(envelope: Envelope): void;
  onEvent(event: ServiceEvent): void;
}

/** The frame's id as its answer must echo it (none when it has no valid one). */
function idOf(frame: Frame): { id?: string | number } {
  const id = requestIdOf(frame);
  return id === undefined ? {} : { id };
}

/** Throws the envelope's error text when it is not ok; returns `data`, typed by the command's result schema. */
export async function call<C extends CommandInput>(backend: { request(frame: Frame): Promise<Envelope> }, frame: C): Promise<ResultOf<C['type']>> {
  const envelope = await backend.request(frame);
  if (envelope.status !== 'ok') throw new Error(envelope.error || 'the service refused the command');
  // The service answers each command with its own result (protocol/results.ts; test/service/protocol-results.test.ts).
  return envelope.data as ResultOf<C['type']>;
}

/**
 * What LocalBackend needs of the service it hosts: the service on its thread (service-thread/
 * hosted-service.ts), or a Service in this process (tests).
 */
export interface LocalService {
  readonly config: {
    readonly current: ServiceConfig;
    on(event: 'change', listener: (fields: string[]) => void): unknown;
    off(event: 'change', listener: (fields: string[]) => void): unknown;
  };
  openSession(options: { source: { kind: 'editor' }; principal: 'access'; canAnswerPermissions: true; send(event: ServiceEvent): void; events?: readonly ServiceEvent['event'][] }): LocalSession;
}

/**
 * The events the editor's own session (commands, the status bar's waiting count, its prompts) uses: the
 * service on its thread sends it no other (a chat's pieces, its conversation's updates are the chat views').
 */
export const EDITOR_SESSION_EVENTS: readonly ServiceEvent['event'][] = ['permission.request', 'permission.resolved'];

interface LocalSession {
  request(frame: unknown): Promise<Envelope>;
  close(): void;
}

/**
 * The window that hosts the service: its sessions come in by the service's door (commands/door.ts), so
 * graceful stop waits for their commands and closes them like any socket's.
 */
export class LocalBackend extends EventEmitter<BackendEvents> implements Backend {
  readonly kind = 'local' as const;
  private readonly session: LocalSession;
  private readonly onChange = (fields: string[]) => {
    this.emit('config', this.config, fields);
  };

  constructor(readonly service: LocalService) {
    super();
    // The editor itself (commands, the status bar's waiting count, its prompt notifications) as one client,
    // the owner (it hosts the service and holds the access token); it hears and answers permission
    // requests like any client, as an attached window's socket does.
    this.session = service.openSession({ source: { kind: 'editor' }, principal: 'access', canAnswerPermissions: true, send: (event) => this.emit('event', event), events: EDITOR_SESSION_EVENTS });
    service.config.on('change', this.onChange);
  }

  get config(): PublicConfig {
    return publicConfigOf(this.service.config.current);
  }

  request(frame: Frame): Promise<Envelope> {
    return this.session.request(frame);
  }

  openViewChannel(sink: ViewSink): ViewChannel {
    const session = this.service.openSession({ source: { kind: 'editor' }, principal: 'access', canAnswerPermissions: true, send: (event) => sink.onEvent(event) });
    let open = true;
    return {
      send: (frame) => {
        void session.request(frame).then((envelope) => open && sink.onResponse(envelope));
      },
      dispose: () => {
        open = false;
        session.close();
      },
    };
  }

  dispose(): void {
    this.session.close();
    this.service.config.off('change', this.onChange);
    this.removeAllListeners();
  }
}

/**
 * A window that does not host: one authenticated WebSocket to the hosting window's service on
 * loopback. Each chat view opens its own socket, so events stay per session as in the host window.
 */
export class RemoteBackend extends EventEmitter<BackendEvents> implements Backend {
  readonly kind = 'remote' as const;
  private current: PublicConfig | undefined;
  private readonly views = new Set<RemoteConnection>();

  private constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly main: RemoteConnection,
  ) {
    super();
    main.onEvent = (event) => {
      this.emit('event', event);
      if (event.event === 'config.changed') void this.refresh(event.fields);
    };
    main.onClose = () => {
      for (const view of this.views) view.close();
      this.emit('closed');
    };
  }

  static async connect(url: string, token: string, timeoutMs = 3_000): Promise<RemoteBackend> {
    const main = await RemoteConnection.open(url, token, timeoutMs);
    const backend = new RemoteBackend(url, token, main);
    await backend.refresh([]);
    return backend;
  }

  get config(): PublicConfig | undefined {
    return this.current;
  }

  private async refresh(fields: string[]): Promise<void> {
    try {
      this.current = await call(this.main, { type: 'get_config' });
      this.emit('config', this.current, fields);
    } catch {
      // The connection is going away; 'closed' follows.
    }
  }

  request(frame: Frame): Promise<Envelope> {
    return this.main.request(frame);
  }

  openViewChannel(sink: ViewSink): ViewChannel {
    let closed = false;
    const opening = RemoteConnection.open(this.url, this.token, 3_000).then((c) => {
      if (closed) {
        c.close();
        return c;
      }
      c.onEvent = sink.onEvent;
      c.onResponse = sink.onResponse;
      this.views.add(c);
      return c;
    });
    opening.catch(() => undefined);
    return {
      send: (frame) => {
        opening.then(
          (c) => c.sendRaw(frame),
          (error: Error) => sink.onResponse({ status: 'error', code: 'server_error', error: `the service is not reachable: ${error.message}`, ...idOf(frame) }),
        );
      },
      dispose: () => {
        closed = true;
        void opening.then(
          (c) => {
            this.views.delete(c);
            c.close();
          },
          () => undefined,
        );
      },
    };
  }

  dispose(): void {
    this.main.onClose = undefined;
    this.main.close();
    for (const view of this.views) view.close();
    this.removeAllListeners();
  }
}

/**
 * One authenticated WebSocket, spoken through the shared protocol client (protocol/client.ts).
 * `request` gives frames a private id and matches the response; a chat view's frames go through
 * `sendRaw` unchanged (their ids, and `cancel`'s use of them, are the UI's) and every response no
 * `request` waits for comes back through `onResponse`.
 */
export class RemoteConnection {
  onEvent?: (event: ServiceEvent) => void;
  onResponse?: (envelope: Envelope) => void;
  onClose?: () => void;

  private constructor(
    private readonly socket: WebSocket,
    private readonly client: ProtocolClient,
  ) {
    client.onEvent((event) => this.onEvent?.(event));
    client.onUnmatched((envelope) => this.onResponse?.(envelope));
    socket.on('close', () => {
      client.closed('the connection to the service closed');
      this.onClose?.();
    });
  }

  static open(url: string, token: string, timeoutMs: number): Promise<RemoteConnection> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { handshakeTimeout: timeoutMs });
      const client = new ProtocolClient({ send: (text) => socket.send(text) }, { idPrefix: 'ext' });
      let handshaking = true;
      const fail = (error: Error) => {
        if (!handshaking) return;
        handshaking = false;
        clearTimeout(timer);
        socket.terminate();
        reject(error);
      };
      const timer = setTimeout(() => fail(new Error('timed out connecting to the service')), timeoutMs);
      const notOurs = () => fail(new Error('the program on this port did not accept the local token'));
      socket.once('error', fail);
      socket.on('error', () => undefined);
      socket.on('message', (data) => {
        const received = client.receive(data.toString());
        // The first frame must answer `auth`: anything else is not our service.
        if (handshaking && !received?.answered) notOurs();
      });
      socket.once('open', () => {
        client.authenticate(token).then((answer) => {
          if (!handshaking) return;
          if (answer.status !== 'ok') return notOurs();
          handshaking = false;
          clearTimeout(timer);
          resolve(new RemoteConnection(socket, client));
        }, fail);
      });
    });
  }

  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  sendRaw(frame: Frame): void {
    if (!this.isOpen) {
      this.onResponse?.({ status: 'error', code: 'server_error', error: 'the connection to the service is closed', ...idOf(frame) });
      return;
    }
    this.socket.send(JSON.stringify(frame));
  }

  request(frame: Frame): Promise<Envelope> {
    if (!this.isOpen) return Promise.resolve({ status: 'error', code: 'server_error', error: 'the connection to the service is closed' });
    // The frame is checked by the service; its own id (if any) gives way to a private one, not echoed back.
    const sent = this.client.request({ ...frame, id: this.client.newId() } as CommandInput);
    return sent.then(
      (envelope) => {
        const { id: _private, ...rest } = envelope;
        void _private;
        return rest as Envelope;
      },
      () => ({ status: 'error', code: 'server_error', error: 'the connection to the service closed' }),
    );
  }

  close(): void {
    this.socket.close();
  }
}
