import { fail, requestIdOf, type Envelope, type ServiceEvent } from '../protocol';
import type { Dispatch } from './dispatcher';
import type { EventHub } from './event-hub';
import { newSessionId, type ClientSession } from './session';

/** What a transport says of a client when it lets it in. */
export interface SessionOptions {
  /** The transport's own id for the client, when it logged it before letting it in (a socket's connection id). */
  id?: string;
  /** Where the client comes from (see ClientSession). */
  source: ClientSession['source'];
  /** How the client proved who it is; absent for a webhook account. */
  principal?: ClientSession['principal'];
  /** The paired device, when the client authenticated with a device credential. */
  deviceId?: string;
  /** The password user, when the client authenticated with a session token of `POST /auth`. */
  username?: string;
  /** The client's address (see ClientSession). */
  address?: string;
  canAnswerPermissions: boolean;
  /** Delivers an event to the client (only called while the session is open). */
  send(event: ServiceEvent): void;
  /** Re-checks the client's credential and address after a config change (see ClientSession). */
  recheck?(): void;
  /** The service closes the session (graceful stop): the transport lets its client go. */
  onClose?(): void;
}

/** A client let in through the door: its commands go to the one dispatcher and are tracked until answered. */
export interface OpenSession {
  readonly id: string;
  readonly session: ClientSession;
  /** One command frame (already parsed JSON) -> its envelope. After close: an error envelope. */
  request(frame: unknown): Promise<Envelope>;
  /**
   * Work of this session that is not a command frame (a webhook turn, whose reply and delivery are written
   * in one transaction by the inbox): counted in flight like a command, so graceful stop waits for it.
   */
  track<T>(work: Promise<T>): Promise<T>;
  /** Leaves the door and the event hub (the client went away, or the service stops). Idempotent. */
  close(): void;
  readonly isOpen: boolean;
}

/**
 * The one door every client comes in by: LAN sockets and relayed clients (transport/connections/client-connection.ts
 * after `auth`), the editor's view (extension/backend.ts), the host itself and each webhook account
 * (channels/webhooks/inbox.ts). The door knows every open
 * session and every command in flight, so a graceful stop (service.ts) can wait for all of them and then
 * close every session, whichever transport carries it.
 */
export class SessionDoor {
  /** Each open session and how the service closes it (leave, then tell its transport). */
  private readonly open = new Map<OpenSession, () => void>();
  /** Commands (and tracked work) not answered yet, and who waits for none to be (settled). */
  private inFlight = 0;
  private settledWaiters: (() => void)[] = [];
  /** Counts one tracked piece of work out; made once, not a closure a command (issue 25). */
  private readonly untrack = () => {
    // Nobody waits but at a stop: splice(0) made an empty array at every command's answer.
    if (--this.inFlight > 0 || this.settledWaiters.length === 0) return;
    for (const resolve of this.settledWaiters.splice(0)) resolve();
  };

  constructor(
    private readonly deps: {
      dispatch: Dispatch;
      events: EventHub;
      /**
       * What a session hears as soon as it is in (the permission requests waiting for it): called after
       * the transport's own answer to the client's `auth`, which follows openSession synchronously.
       */
      welcome?: (session: ClientSession) => void;
    },
  ) {}

  openSession(options: SessionOptions): OpenSession {
    let isOpen = true;
    const session: ClientSession = {
      id: options.id ?? newSessionId(),
      source: options.source,
      canAnswerPermissions: options.canAnswerPermissions,
      ...(options.principal ? { principal: options.principal } : {}),
      ...(options.deviceId ? { deviceId: options.deviceId } : {}),
      ...(options.username ? { username: options.username } : {}),
      ...(options.address !== undefined ? { address: options.address } : {}),
      send: (event) => {
        if (isOpen) options.send(event);
      },
      ...(options.recheck ? { recheck: options.recheck } : {}),
    };
    const leaveHub = this.deps.events.add(session);
    const close = () => {
      if (!isOpen) return;
      isOpen = false;
      leaveHub();
      this.open.delete(opened);
    };
    const opened: OpenSession = {
      id: session.id,
      session,
      get isOpen() {
        return isOpen;
      },
      request: (frame) => {
        if (!isOpen) return Promise.resolve(fail('server_error', 'the session is closed', requestIdOf(frame)));
        return this.track(this.deps.dispatch(frame, session));
      },
      track: (work) => this.track(work),
      close,
    };
    this.open.set(opened, () => {
      close();
      options.onClose?.();
    });
    const welcome = this.deps.welcome;
    if (welcome) queueMicrotask(() => isOpen && welcome(session));
    return opened;
  }

  /**
   * Resolves once no command of any session is in flight, counting those that arrive meanwhile (a
   * client may still send while the service stops; the caller bounds the wait).
   */
  settled(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  /** The service stops: every session leaves and its transport is told to let the client go. */
  closeAll(): void {
    for (const shut of [...this.open.values()]) shut();
  }

  get size(): number {
    return this.open.size;
  }

  get inFlightCount(): number {
    return this.inFlight;
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.inFlight += 1;
    work.then(this.untrack, this.untrack);
    return work;
  }
}
