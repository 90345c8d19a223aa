import { EventEmitter } from 'node:events';
import { readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Host } from '../agent/host';
import { CONFIG_FILE_NAME, EDITOR_HOST_FILE_NAME } from '../platform/paths';
import { redactText } from '../log/redact';
import { DataDirInUseError, pidAlive } from '../platform/lock-file';
import { HostedService } from '../service-thread/hosted-service';
import { PortInUseError } from '../transport/port-in-use';
import { LocalBackend, RemoteBackend, type Backend } from './backend';

/** Written by the hosting window once it listens, so the other windows know where to attach. */
export const HOST_FILE_NAME = EDITOR_HOST_FILE_NAME;
/** VS Code gives deactivate() about 5 s; the service's own grace period is longer. */
export const DEACTIVATE_BUDGET_MS = 4_500;

export type HostingState =
  | { state: 'starting' }
  | { state: 'hosting'; host: string; port: number; startupMs: number }
  | { state: 'client'; port: number }
  | { state: 'waiting'; detail: string }
  | { state: 'port_busy'; port: number }
  | { state: 'stopped' }
  | { state: 'error'; detail: string };

export interface HostingOptions {
  dataDir: string;
  /** The port setting, read at each (re)start. */
  port: () => number;
  hostServices: Host;
  log: (line: string) => void;
  /** Retry timing of a window that waits to host or to attach (shortened by tests). */
  retry?: { initialMs: number; maxMs: number };
  /** Bind address override (tests: 127.0.0.1). */
  bindHost?: string;
  /**
   * What must be ready before the service takes its first command (the API keys from SecretStorage),
   * awaited alongside the service's open rather than before it: the two wait on different things.
   */
  ready?: Promise<unknown>;
}

export interface HostingEvents {
  state: [HostingState];
  /** The backend this window talks to changed (hosting, attached, or none). */
  backend: [Backend | undefined];
}

/**
 * Exactly one window hosts the service: the one that gets the data directory's lock (service.lock,
 * which the store takes at open). Every other window attaches to it over loopback with the local
 * token, and when that connection drops it tries to host again, with backoff: whoever gets the lock
 * hosts, the rest attach again. Only the lock holder ever binds the port, so windows never fight for it.
 */
export class Hosting extends EventEmitter<HostingEvents> {
  /** The service this window hosts, on a thread of its own (service-thread/hosted-service.ts). */
  service: HostedService | undefined;
  backend: Backend | undefined;
  private current: HostingState = { state: 'stopped' };
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private running = false;
  /** stop() calls so far: a restart asked before a stop does not host again after it. */
  private stops = 0;
  private queue: Promise<unknown> = Promise.resolve();
  /** Resolves once this.service is torn down: the attempt waiting for its open stops waiting then. */
  private gone: Promise<void> = Promise.resolve();
  private markGone: () => void = () => undefined;
  /** A service torn down whose stop outlasted the budget (its open still held): its lock is still taken. */
  private finishing: Promise<unknown> | undefined;

  constructor(private readonly options: HostingOptions) {
    super();
  }

  get state(): HostingState {
    return this.current;
  }

  /** Starts (or restarts) hosting or attaching; resolves with the state reached. */
  start(): Promise<HostingState> {
    this.running = true;
    return this.serial(() => this.attempt());
  }

  /**
   * start(), told in two steps: `serving` resolves with the first state this window reaches (listening,
   * attached, waiting, port busy, or an error) without waiting for the store's open; `whole` is start()'s
   * own promise, once the store is open (or the open failed: the error state, shown as before). The
   * editor's activation ends at `serving`: its commands wait for the open in the service.
   */
  begin(): { serving: Promise<HostingState>; whole: Promise<HostingState> } {
    const whole = this.start();
    const serving = new Promise<HostingState>((resolve, reject) => {
      const reached = (state: HostingState) => {
        if (state.state === 'starting') return;
        this.off('state', reached);
        resolve(state);
      };
      this.on('state', reached);
      whole.then(reached, (error: unknown) => {
        this.off('state', reached);
        reject(error as Error);
      });
    });
    return { serving, whole };
  }

  /**
   * Stops the service (bounded by the deactivate budget) or detaches, and stops retrying. At once, not
   * behind the queue: an attempt there may be waiting for the store's open (a held SecretStorage, a slow
   * disk), for as long as that takes; it finds the service gone when the open ends (stillHosting).
   */
  async stop(): Promise<void> {
    this.running = false;
    this.stops += 1;
    clearTimeout(this.retryTimer);
    const stopped = async () => {
      await this.teardown();
      this.setState({ state: 'stopped' });
    };
    // What an attempt under way still sets up (an attach that connects meanwhile) is undone after it.
    void this.serial(stopped);
    await stopped();
  }

  restart(): Promise<HostingState> {
    const stops = this.stops;
    // The service goes at once, as in stop(): an attempt waiting for its open would hold the queue.
    const tornDown = this.teardown();
    return this.serial(async () => {
      await tornDown;
      await this.teardown();
      if (this.stops !== stops) return this.current;
      this.running = true;
      return this.attempt();
    });
  }

  /** Retry listening after "port busy", keeping the same port. */
  retryListen(): Promise<HostingState> {
    return this.serial(async () => {
      if (!this.service || this.current.state !== 'port_busy') return this.current;
      return this.listen(this.service, performance.now());
    });
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async attempt(): Promise<HostingState> {
    clearTimeout(this.retryTimer);
    if (!this.running) return this.current;
    const began = performance.now();
    if (this.current.state !== 'client') this.setState({ state: 'starting' });
    let service: HostedService;
    try {
      // Resolves once the data directory is locked (this window hosts); the store opens behind, while
      // the service listens: the backend's commands (and the keys, `ready`) are waited for in the service.
      // The service runs on a thread of its own: its work and its garbage collection never stop the
      // extension host's loop, which every extension shares.
      service = await HostedService.begin({
        dataDir: this.options.dataDir,
        port: this.options.port(),
        host: this.options.bindHost,
        hostServices: this.options.hostServices,
        hostReady: this.options.ready,
      });
    } catch (error) {
      // Our own service, stopped while its open was held, still has the lock: waited for, with retries.
      if (error instanceof DataDirInUseError && this.finishing) return this.waitAndRetry('the service stopped a moment ago is still finishing (its store was opening); hosting once it is done');
      if (error instanceof DataDirInUseError) return this.attach();
      return this.openFailed(error as Error);
    }
    // Stopped while the data directory was being locked: nothing hosts.
    if (!this.running) {
      void service.stop().catch(() => undefined);
      return this.current;
    }
    this.service = service;
    service.on('exit', (error) => void this.serial(() => this.threadEnded(service, error)));
    this.gone = new Promise<void>((resolve) => (this.markGone = resolve));
    // The editor's commands and views work at once: their commands wait for the store in the service.
    this.setBackend(new LocalBackend(service));
    return this.listen(service, began);
  }

  /**
   * Waits for the service's store to open; undefined once whole, the error state when the open failed,
   * and the state reached meanwhile when the service was stopped while it opened (stop()).
   */
  private async whole(service: HostedService): Promise<HostingState | undefined> {
    if (!this.stillHosting(service)) return this.current;
    try {
      // Not past a teardown: the queue waits for this attempt, and a Start after Stop would wait for
      // an open held as long as the keys are (unbounded).
      await Promise.race([service.ready, this.gone]);
      return this.stillHosting(service) ? undefined : this.current;
    } catch (error) {
      return this.stillHosting(service) ? this.openFailed(error as Error) : this.current;
    }
  }

  /** The service's thread ended without being stopped (it crashed): the error is shown, as a failed open's. */
  private async threadEnded(service: HostedService, error: Error): Promise<HostingState> {
    if (!this.stillHosting(service)) return this.current;
    // What the thread threw may quote anything it held: the secrets it had are taken out (in process, such
    // an error ended the whole extension host instead).
    const message = redactText(error.message, service.redactor.secrets());
    this.options.log(`the service stopped unexpectedly: ${message}`);
    await this.teardown();
    return this.setState({ state: 'error', detail: `the service stopped unexpectedly (${message}); run "Restart Service" to start it again` });
  }

  /** Whether `service` is still this window's (not stopped or replaced while it opened or bound). */
  private stillHosting(service: HostedService): boolean {
    return this.service === service;
  }

  /** The service could not open (service.json invalid, service.db damaged): the error stays shown, nothing retries. */
  private async openFailed(error: Error): Promise<HostingState> {
    this.options.log(`service could not open: ${error.message}`);
    await this.teardown();
    return this.setState({ state: 'error', detail: error.message });
  }

  private async listen(service: HostedService, began: number): Promise<HostingState> {
    try {
      const address = await service.start();
      if (!this.stillHosting(service)) return this.current;
      const startupMs = Math.round(performance.now() - began);
      this.failures = 0;
      // Serving from here on (the activation's figure): the state says so at once. The note for the
      // other windows follows once the store is open, so a window that attaches is answered at once
      // rather than timing out behind the open; start() resolves then too, as before.
      const state = this.setState({ state: 'hosting', host: address.host, port: address.port, startupMs });
      const failed = await this.whole(service);
      if (failed) return failed;
      await writeFile(join(this.options.dataDir, HOST_FILE_NAME), JSON.stringify({ pid: process.pid, port: address.port }), { mode: 0o600 }).catch(() => undefined);
      const steps = service.startSteps ? `: ${service.startSteps}` : '';
      this.options.log(`hosting the service on ${address.url} (listening in ${startupMs} ms${steps}; whole in ${Math.round(performance.now() - began)} ms)`);
      return state;
    } catch (error) {
      if (!this.stillHosting(service)) return this.current;
      if (error instanceof PortInUseError) {
        // Keep the lock and the in-process backend: the chat view still works in this window.
        this.options.log(error.message);
        return (await this.whole(service)) ?? this.setState({ state: 'port_busy', port: error.port });
      }
      // The open's own failure (start() meets it too) is told as an open's.
      if (this.service === service && service.openFailed) return this.openFailed(error as Error);
      this.options.log(`service could not start: ${(error as Error).message}`);
      await this.teardown();
      return this.setState({ state: 'error', detail: (error as Error).message });
    }
  }

  private async attach(): Promise<HostingState> {
    const { port, token } = await this.hostAddress();
    if (port === undefined) return this.waitAndRetry('another window holds the service but is not listening (yet)');
    if (!token) return this.waitAndRetry('no access token in service.json yet');
    try {
      const backend = await RemoteBackend.connect(`ws://127.0.0.1:${port}/ws`, token);
      this.failures = 0;
      backend.once('closed', () => {
        if (this.backend !== backend) return;
        this.options.log('the hosting window went away; trying to host');
        this.setBackend(undefined);
        this.setState({ state: 'waiting', detail: 'the hosting window closed' });
        // Jitter only: the windows that were attached race for the lock, one wins, the others attach.
        this.scheduleRetry(50 + Math.random() * 250);
      });
      this.setBackend(backend);
      this.options.log(`attached to the service hosted by another window on port ${port}`);
      return this.setState({ state: 'client', port });
    } catch (error) {
      return this.waitAndRetry(`another window hosts the service but it is not reachable on port ${port} (${(error as Error).message})`);
    }
  }

  private waitAndRetry(detail: string): HostingState {
    const { initialMs, maxMs } = this.options.retry ?? { initialMs: 250, maxMs: 5_000 };
    const delay = Math.min(maxMs, initialMs * 2 ** this.failures) * (0.75 + Math.random() * 0.5);
    this.failures += 1;
    this.scheduleRetry(delay);
    return this.setState({ state: 'waiting', detail });
  }

  private scheduleRetry(delayMs: number): void {
    clearTimeout(this.retryTimer);
    if (!this.running) return;
    this.retryTimer = setTimeout(() => void this.serial(() => this.attempt()), delayMs);
  }

  /**
   * Where the hosting window listens, from the file it writes once listening. Without that file (the
   * host is starting, or its port is taken by another program) nothing is tried: the access token is
   * only ever sent to our own service.
   */
  private async hostAddress(): Promise<{ port: number | undefined; token: string | undefined }> {
    let port: number | undefined;
    try {
      const info = JSON.parse(await readFile(join(this.options.dataDir, HOST_FILE_NAME), 'utf8')) as { pid?: unknown; port?: unknown };
      if (typeof info.port === 'number' && typeof info.pid === 'number' && pidAlive(info.pid)) port = info.port;
    } catch {
      port = undefined;
    }
    let token: string | undefined;
    try {
      const config = JSON.parse(await readFile(join(this.options.dataDir, CONFIG_FILE_NAME), 'utf8')) as { auth_token?: unknown };
      if (typeof config.auth_token === 'string') token = config.auth_token;
    } catch {
      token = undefined;
    }
    return { port, token };
  }

  private async teardown(): Promise<void> {
    clearTimeout(this.retryTimer);
    const service = this.service;
    this.service = undefined;
    this.markGone();
    this.setBackend(undefined);
    if (!service) return;
    const hostFile = join(this.options.dataDir, HOST_FILE_NAME);
    try {
      const info = JSON.parse(await readFile(hostFile, 'utf8')) as { pid?: unknown };
      if (info.pid === process.pid) await unlink(hostFile);
    } catch {
      // none
    }
    const began = performance.now();
    const stopped = service.stop().then(
      () => true,
      (error: Error) => {
        this.options.log(`service stop failed: ${error.message}`);
        return true;
      },
    );
    const finishing = stopped.finally(() => {
      if (this.finishing === finishing) this.finishing = undefined;
    });
    this.finishing = finishing;
    const inTime = await Promise.race([stopped, new Promise<false>((resolve) => setTimeout(() => resolve(false), DEACTIVATE_BUDGET_MS).unref())]);
    this.options.log(inTime ? `service stopped in ${Math.round(performance.now() - began)} ms` : 'service still finishing in-flight work after the deactivate budget; it stops in the background');
  }

  private setBackend(backend: Backend | undefined): void {
    if (this.backend === backend) return;
    this.backend?.dispose();
    this.backend = backend;
    this.emit('backend', backend);
  }

  private setState(state: HostingState): HostingState {
    this.current = state;
    this.emit('state', state);
    return state;
  }
}
