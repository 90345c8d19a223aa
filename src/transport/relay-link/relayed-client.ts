import { E2EError, acceptHello, parseHello, type SecureChannel } from '../../tunnel';
import type { Logger } from '../../log/logger';
import { clampCloseReason, textOf, type MachineFrame } from '../../protocol';
import type { ClientKeys } from './client-keys';
import { CLOSE_RATE_LIMITED, openClientConnection, type ClientConnection, type ClientConnectionDeps } from '../connections/client-connection';
import type { LoginAttempt } from '../auth/login-failures';
import type { MachineIdentity } from './machine-identity';

/** Close codes the service gives relayed clients (the relay passes 4000-4999 on). */
export const CLOSE_E2E_FAILED = 4400;
export const CLOSE_UNKNOWN_KEY = 4401;
export const CLOSE_HELLO_TIMEOUT = 4408;

/** The relay closes clients only with 4000-4999 (docs/relay.md): 1009 (frame too big) becomes 4009, others 4000. */
export function relayCloseCode(code: number): number {
  if (code >= 4000 && code <= 4999) return code;
  return code >= 1000 && code <= 1999 ? 4000 + (code % 1000) : 4000;
}

export interface RelayedClientDeps {
  /** Sends a machine frame (`data` or `close`) to the relay. */
  toRelay(frame: MachineFrame): void;
  identity: MachineIdentity;
  clientKeys: ClientKeys;
  sessions: ClientConnectionDeps;
  logger: Logger;
  /** Where the client came from, for the log (the channel's name). */
  via: string;
  handshakeTimeoutMs: number;
}

/**
 * One client of the relay: the end-to-end handshake (its hello, key admission, our welcome), then an
 * ordinary client connection (auth, commands, events) whose frames travel in the tunnel's boxes.
 */
export class RelayedClient {
  private state: 'hello' | 'admitting' | 'open' | 'closed' = 'hello';
  private channel?: SecureChannel;
  private session?: ClientConnection;
  /** Frames that arrived while the key was being admitted (the client may not wait for the welcome). */
  private readonly early: string[] = [];
  private readonly helloTimer: ReturnType<typeof setTimeout>;
  /** A v2 session's key until its first box opens (then it is refused v1 hellos: ClientKeys.spokeV2). */
  private v2Key?: string;
  private readonly log: Logger;

  constructor(
    readonly cid: string,
    /** Where the client connected to the relay from, as the relay says (undefined from older relays). */
    private readonly address: string | undefined,
    private readonly deps: RelayedClientDeps,
  ) {
    this.log = deps.logger.child({ relay_client: cid, channel: deps.via });
    this.helloTimer = setTimeout(() => this.close(CLOSE_HELLO_TIMEOUT, 'no e2e hello in time'), deps.handshakeTimeoutMs);
  }

  receive(text: string): void {
    switch (this.state) {
      case 'hello':
        return void this.handshake(text);
      case 'admitting':
        if (this.early.length < 64) this.early.push(text);
        else this.close(CLOSE_E2E_FAILED, 'too many frames before the welcome');
        return;
      case 'open':
        return this.openBox(text);
      case 'closed':
        return;
    }
  }

  /** The relay said the client left, or the machine link dropped. */
  closed(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    clearTimeout(this.helloTimer);
    this.session?.closed();
  }

  /**
   * What this client's failed logins count against (login-failures.ts): the address it reached the relay
   * from, apart from LAN addresses (a relay cannot lock a LAN phone out); from an older relay that does
   * not say it, the client's key (each one needed a pairing to get in).
   */
  private limitAddress(clientKey: string | undefined): string {
    if (this.address && this.address !== 'unknown') return `relay:${this.deps.via}:${this.address}`;
    return `relay:${this.deps.via}:key:${clientKey ?? 'none'}`;
  }

  private async handshake(text: string): Promise<void> {
    this.state = 'admitting';
    const failures = this.deps.sessions.auth.failures;
    let attempt: LoginAttempt | undefined;
    try {
      const hello = parseHello(text);
      // A key the machine does not know is a failed login: counted and logged once per burst, and over
      // the limit refused before the key is even looked up.
      attempt = failures.begin(this.limitAddress(hello.clientKey), 'client_key');
      if (attempt.retryAfterSeconds > 0) return this.close(CLOSE_RATE_LIMITED, 'too many failed logins');
      const admission = await this.deps.clientKeys.admit(hello).catch((error: unknown) => {
        // A v1 hello of a key that has spoken v2 guesses nothing (a public key is no secret): an old tab
        // of the phone retrying it must not lock the phone's address, nor anyone the key's bucket.
        if (error instanceof E2EError) attempt!.refund();
        throw error;
      });
      if (!admission) attempt.failed({ relay_client: this.cid, client_key: hello.clientKey.slice(0, 8) });
      else attempt.refund();
      if (this.state !== 'admitting') return;
      if (!admission) return this.close(CLOSE_UNKNOWN_KEY, 'unknown client key');
      const { welcome, channel } = acceptHello(this.deps.identity.keyPair, hello);
      clearTimeout(this.helloTimer);
      this.deps.toRelay({ t: 'data', c: this.cid, d: welcome });
      this.channel = channel;
      if (hello.version === 2) this.v2Key = hello.clientKey;
      this.state = 'open';
      this.log.info('relay.tunnel_open', { admission, e2e: hello.version });
      this.session = openClientConnection(
        {
          send: (plain) => this.deps.toRelay({ t: 'data', c: this.cid, d: channel.seal(textOf(plain)) }),
          close: (code, reason) => this.close(code, reason),
          clientKey: hello.clientKey,
        },
        'relay',
        `relay:${this.deps.via}`,
        this.deps.sessions,
        this.limitAddress(hello.clientKey),
      );
      for (const frame of this.early.splice(0)) this.receive(frame);
    } catch (error) {
      const refused = error instanceof E2EError;
      // Garbage instead of a hello is a failed login too, logged once per burst like the others; a
      // failure of ours (the store) is not the client's.
      if (!refused) attempt?.refund();
      else if (!attempt) failures.noted(this.limitAddress(undefined), 'client_key', { relay_client: this.cid, reason: error.reason });
      else attempt.failed({ relay_client: this.cid, reason: error.reason });
      if (this.isClosed) return;
      if (refused) return this.close(CLOSE_E2E_FAILED, error.message);
      this.log.error('relay.handshake_failed', { error });
      this.close(CLOSE_E2E_FAILED, 'handshake failed');
    }
  }

  /** (A getter, so the compiler does not narrow the state across awaits.) */
  get isClosed(): boolean {
    return this.state === 'closed';
  }

  private openBox(text: string): void {
    let plain: string;
    try {
      plain = this.channel!.open(text);
    } catch (error) {
      this.log.warn('relay.e2e_failed', { reason: error instanceof E2EError ? error.reason : 'error' });
      return this.close(CLOSE_E2E_FAILED, 'e2e frame refused');
    }
    if (this.v2Key) {
      const key = this.v2Key;
      this.v2Key = undefined;
      this.deps.clientKeys.spokeV2(key).catch((error: unknown) => this.log.error('relay.e2e_v2_mark_failed', { error }));
    }
    this.session!.receive(plain, Buffer.byteLength(plain));
  }

  private close(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.deps.toRelay({ t: 'close', c: this.cid, code: relayCloseCode(code), reason: clampCloseReason(reason) });
    this.closed();
  }
}
