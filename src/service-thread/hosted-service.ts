// The editor's side of the service on its own thread (service-thread.ts): what the extension (hosting.ts,
// backend.ts) uses of the service, over the thread's port. The service's work and its garbage collection
// stay off the extension host's loop, which every extension shares (docs/design.md, "The service on a
// thread of its own").
import { EventEmitter } from 'node:events';
import type { Worker } from 'node:worker_threads';
import type { Host } from '../agent/host';
import { keepToolsOut } from '../agent/tools/private-folders';
import { startWorkerThread } from '../platform/worker-thread';
import { releaseEndedThreadLock } from '../platform/lock-file';
import { fail, KEYED_PROVIDERS, requestIdOf, type Envelope, type ServiceConfig, type ServiceEvent } from '../protocol';
import { HostAnswers } from './host-answers';
import { takeEarly } from './early-thread';
import { describeStart, wallNow } from './start-marks';
import type { LoopFigures } from '../extension/diagnostics';
import { describeSource, fromWire, type FromThread, type HostMirrors, type ThreadStart, type ToThread } from './wire';

export interface HostedOptions {
  dataDir: string;
  port?: number;
  host?: string;
  /** The editor's parts the service uses (its models, tools, terminal, folders, keys): answered on this thread. */
  hostServices: Host;
  /** What the editor must have done before the service takes its first command (its API keys read). */
  hostReady?: Promise<unknown>;
}

/** The service's config as last told by its thread: `current`, and 'change' with the fields that changed. */
export class ConfigMirror extends EventEmitter<{ change: [fields: string[]] }> {
  constructor(public current: ServiceConfig) {
    super();
  }
}

/** A session of the editor's (its commands, a chat view) in the service: frames in, its answers and events out. */
export interface HostedSession {
  request(frame: unknown): Promise<Envelope>;
  close(): void;
}

/** The answer to a frame the stopped (or crashed) thread will never answer: with the frame's id, so a chat view matches it. */
const stopped = (frame: unknown): Envelope => fail('server_error', 'the service stopped', requestIdOf(frame));

export class HostedService extends EventEmitter<{ exit: [error: Error] }> {
  readonly config: ConfigMirror;
  private secretsHeld: string[] = [];
  readonly redactor = { secrets: () => this.secretsHeld };
  readonly ready: Promise<void>;
  private failedOpen = false;
  private readonly answers: HostAnswers;
  private next = 0;
  private readonly sessions = new Map<number, (event: ServiceEvent) => void>();
  private readonly responses = new Map<number, { resolve: (envelope: Envelope) => void; frame: unknown }>();
  private readonly lan = new Map<number, { resolve(changed: boolean): void; reject(error: Error): void }>();
  /** Measurements of the thread's loop asked to stop, answered in order. */
  private readonly loopFigures: ((figures: LoopFigures | undefined) => void)[] = [];
  /** The messages crossing the port by kind, while Measure Responsiveness runs. */
  private crossings?: { in: Map<string, number>; out: Map<string, number>; joined: Map<string, number> };
  private starting?: { resolve(address: { host: string; port: number; url: string }): void; reject(error: Error): void };
  /** A listen asked and not yet answered (start()). */
  private startAsked?: Promise<{ host: string; port: number; url: string }>;
  /** The first listen, asked with the thread's boot (ThreadStart's `listen`): what the first start() answers. */
  private firstStart?: Promise<{ host: string; port: number; url: string }>;
  /** What the thread's start was made of, once it listened (describeStart): the editor's log tells it. */
  startSteps?: string;
  private stopped?: Promise<void>;
  private markStopped: () => void = () => undefined;
  private ended = false;

  private constructor(
    private readonly worker: Worker,
    private readonly options: HostedOptions,
    config: ServiceConfig,
    ready: Promise<void>,
    /** Settles once the thread is gone and its lock let go of. */
    private readonly gone: Promise<void>,
  ) {
    super();
    this.config = new ConfigMirror(config);
    this.ready = ready;
    this.ready.catch(() => (this.failedOpen = true));
    this.answers = new HostAnswers(options.hostServices, (message) => this.post(message));
  }

  /**
   * Starts the thread, which loads service.json and takes the data directory's lock: resolves then (the
   * store opening behind, `ready`), or rejects as Service.begin does (DataDirInUseError, a config error).
   * The thread listens at once once locked: the first start() answers with that listen.
   */
  static begin(options: HostedOptions): Promise<HostedService> {
    const asked = wallNow();
    const start: ThreadStart = {
      listen: true,
      dataDir: options.dataDir,
      port: options.port,
      host: options.host,
      toolSources: (options.hostServices.toolSources ?? []).map(describeSource),
      laterToolSources: (options.hostServices.laterToolSources ?? []).map(describeSource),
      languageModels: options.hostServices.languageModels !== undefined,
      terminal: options.hostServices.terminal !== undefined,
      mirrors: mirrorsOf(options.hostServices),
    };
    // The editor's own tools and context (open_file, get_selection, the active file's chip) run on this
    // thread: they must never reach the data directory (service.json holds the access token) either.
    const releaseDataDir = keepToolsOut(options.dataDir);
    // The window's first hosting takes the thread started as the extension loaded (early-thread.ts), up already.
    const worker = takeEarly() ?? startWorkerThread('service-thread', __dirname);
    worker.postMessage({ t: 'boot', start } satisfies ToThread);
    worker.once('exit', releaseDataDir);
    // Its data directory's lock is let go of when the thread is gone, whichever way it went and whenever (a
    // thread that crashed or was terminated, even before it said `begun`, may not have run its exit hook):
    // the next service of this window may take it.
    const threadId = worker.threadId;
    const gone = new Promise<void>((resolve) => worker.once('exit', () => void releaseEndedThreadLock(options.dataDir, threadId).finally(resolve)));
    return new Promise<HostedService>((resolve, reject) => {
      let hosted: HostedService | undefined;
      let config: ServiceConfig | undefined;
      let secrets: string[] = [];
      let readyResolve: () => void = () => undefined;
      let readyReject: (error: Error) => void = () => undefined;
      const ready = new Promise<void>((res, rej) => ((readyResolve = res), (readyReject = rej)));
      ready.catch(() => undefined);
      const early = (message: FromThread) => {
        if (message.t === 'config') config = message.config;
        else if (message.t === 'secrets') secrets = message.secrets;
        else if (message.t === 'begin-failed') {
          worker.off('message', early);
          void worker.terminate();
          reject(fromWire(message.error));
        } else if (message.t === 'begun' && config) {
          worker.off('message', early);
          hosted = new HostedService(worker, options, config, ready, gone);
          hosted.secretsHeld = secrets;
          // Its `started` comes next on this port: listened for from here, in this very handler.
          const made = hosted;
          made.firstStart = new Promise((resolveStart, rejectStart) => (made.starting = { resolve: resolveStart, reject: rejectStart }));
          made.firstStart.catch(() => undefined);
          made.listen(readyResolve, readyReject, asked);
          resolve(hosted);
        }
      };
      worker.on('message', early);
      const failed = (error: Error) => {
        if (hosted) return;
        reject(error);
      };
      worker.once('error', failed);
      worker.once('exit', (code) => failed(new Error(`the service's thread ended (exit code ${code}) before it began`)));
      // Its failure is the editor's to tell (a key not read): the service goes on without it, as in process.
      // The keys read meanwhile go first.
      const hostReady = () => {
        worker.postMessage({ t: 'mirrors', mirrors: mirrorsOf(options.hostServices) } satisfies ToThread);
        worker.postMessage({ t: 'host-ready' } satisfies ToThread);
      };
      void Promise.resolve(options.hostReady).then(hostReady, hostReady);
    });
  }

  private listen(readyResolve: () => void, readyReject: (error: Error) => void, asked: number): void {
    const receive = (message: FromThread): void => {
      switch (message.t) {
        case 'batch':
          // One crossing: its messages are taken in order, in this one task (the chat views post them as one).
          for (const one of message.messages) {
            if (this.crossings) countCrossing(this.crossings.joined, one);
            receive(one);
          }
          return;
        case 'config':
          this.config.current = message.config;
          this.config.emit('change', message.fields);
          return;
        case 'secrets':
          this.secretsHeld = message.secrets;
          return;
        case 'ready':
          return readyResolve();
        case 'ready-failed':
          return readyReject(fromWire(message.error));
        case 'started':
          if (message.marks) this.startSteps = describeStart(message.marks, asked);
          this.starting?.resolve(message.address);
          this.starting = undefined;
          return;
        case 'start-failed':
          this.starting?.reject(fromWire(message.error));
          this.starting = undefined;
          return;
        case 'stopped':
          this.markStopped();
          return;
        case 'event':
          return this.sessions.get(message.sid)?.(message.event);
        case 'response': {
          const answer = this.responses.get(message.rid)?.resolve;
          this.responses.delete(message.rid);
          return answer?.(message.envelope);
        }
        case 'session-closed':
          this.sessions.delete(message.sid);
          return;
        case 'lan-done': {
          const waiting = this.lan.get(message.rid);
          this.lan.delete(message.rid);
          if (message.error) waiting?.reject(fromWire(message.error));
          else waiting?.resolve(message.changed === true);
          return;
        }
        case 'loop-figures':
          return this.loopFigures.shift()?.(message.figures);
        case 'call':
        case 'abort':
          return this.answers.received(message);
        default:
          return;
      }
    };
    this.worker.on('message', (message: FromThread) => {
      if (this.crossings) countCrossing(this.crossings.in, message);
      receive(message);
    });
    const died = (error: Error) => {
      if (this.ended) return;
      this.ended = true;
      this.answers.close();
      readyReject(error);
      this.starting?.reject(error);
      for (const { resolve, frame } of this.responses.values()) resolve(stopped(frame));
      this.responses.clear();
      for (const waiting of this.loopFigures.splice(0)) waiting(undefined);
      for (const waiting of this.lan.values()) waiting.reject(error);
      this.lan.clear();
      this.sessions.clear();
      this.markStopped();
      if (!this.stopped) this.emit('exit', error);
    };
    this.worker.on('error', (error) => died(error));
    this.worker.on('exit', (code) => died(new Error(`the service's thread ended (exit code ${code})`)));
  }

  get openFailed(): boolean {
    return this.failedOpen;
  }

  /** Listens (the tcp channel's port, or the one given); rejects with PortInUseError when it is taken. */
  start(): Promise<{ host: string; port: number; url: string }> {
    const first = this.firstStart;
    this.firstStart = undefined;
    if (first) return first;
    if (this.ended) return Promise.reject(new Error('the service stopped'));
    // One listen at a time: a second call while one is asked gets its answer (the thread answers in order).
    this.startAsked ??= new Promise<{ host: string; port: number; url: string }>((resolve, reject) => {
      this.starting = { resolve, reject };
      this.post({ t: 'start' });
    }).finally(() => (this.startAsked = undefined));
    return this.startAsked;
  }

  /** The service's graceful stop on its thread, then the thread ends. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      if (!this.ended) {
        const done = new Promise<void>((resolve) => (this.markStopped = resolve));
        this.post({ t: 'stop' });
        await done;
      }
      // The thread's exit settles what is still waiting (died, below): a frame sent after the thread let
      // its sessions go is answered then, not left waiting for a port that no longer listens.
      await this.worker.terminate();
      await this.gone;
    })();
    return this.stopped;
  }

  /**
   * A session of the editor's: the owner's (it holds the access token), answering permission requests.
   * `events`: the only kinds it hears (the others never cross the port).
   */
  openSession(options: { send(event: ServiceEvent): void; events?: readonly ServiceEvent['event'][] }): HostedSession {
    const sid = (this.next += 1);
    this.sessions.set(sid, options.send);
    this.post({ t: 'session-open', sid, ...(options.events ? { events: options.events } : {}) });
    return {
      request: (frame) => {
        if (this.ended) return Promise.resolve(stopped(frame));
        const rid = (this.next += 1);
        return new Promise<Envelope>((resolve) => {
          this.responses.set(rid, { resolve, frame });
          this.post({ t: 'session-request', sid, rid, frame });
        });
      },
      close: () => {
        if (!this.sessions.delete(sid)) return;
        this.post({ t: 'session-close', sid });
      },
    };
  }

  /** The `remoteAssistant.lanAccess` setting applied to service.json (config/lan-access.ts); whether it changed. */
  applyLanAccess(enabled: boolean): Promise<boolean> {
    if (this.ended) return Promise.reject(new Error('the service stopped'));
    const rid = (this.next += 1);
    return new Promise((resolve, reject) => {
      this.lan.set(rid, { resolve, reject });
      this.post({ t: 'lan', rid, enabled });
    });
  }

  /**
   * Measure Responsiveness on the thread's own loop: starts its monitor (LoopMonitor, as the extension
   * host's), and counts the messages crossing the port meanwhile (each is a task of the extension host's loop).
   */
  startLoopMonitor(): void {
    this.crossings = { in: new Map(), out: new Map(), joined: new Map() };
    this.post({ t: 'monitor', on: true });
  }

  /** Stops it: its figures (undefined when it was not measuring, or the thread is gone), and the crossings counted. */
  async stopLoopMonitor(): Promise<{ figures?: LoopFigures; crossings?: string }> {
    const counted = this.crossings;
    this.crossings = undefined;
    // `in` counts what crossed (a batch once); `batched` what those batches carried, by kind.
    const crossings = counted && `in ${describeCrossings(counted.in)}; batched ${describeCrossings(counted.joined)}; out ${describeCrossings(counted.out)}`;
    if (this.ended) return { crossings };
    const figures = await new Promise<LoopFigures | undefined>((resolve) => {
      this.loopFigures.push(resolve);
      this.post({ t: 'monitor', on: false });
    });
    return { figures, crossings };
  }

  /** The editor's folders or keys changed: the thread's copy follows. */
  hostChanged(): void {
    this.post({ t: 'mirrors', mirrors: mirrorsOf(this.options.hostServices) });
  }

  private post(message: ToThread): void {
    if (this.ended) return;
    if (this.crossings) countCrossing(this.crossings.out, message);
    this.worker.postMessage(message);
  }
}

/** A message by its kind (an event by its name, a host call by its method): how many crossed. */
function countCrossing(counts: Map<string, number>, message: FromThread | ToThread): void {
  const frameType = (frame: unknown) => (frame && typeof frame === 'object' && 'type' in frame && typeof frame.type === 'string' ? frame.type : '?');
  const kind =
    message.t === 'event' ? `event ${message.event.event}` : message.t === 'call' ? `call ${message.call.method}` : message.t === 'session-request' ? `request ${frameType(message.frame)}` : message.t;
  counts.set(kind, (counts.get(kind) ?? 0) + 1);
}

function describeCrossings(counts: Map<string, number>): string {
  let total = 0;
  for (const n of counts.values()) total += n;
  const kinds = [...counts].sort((a, b) => b[1] - a[1]).map(([kind, n]) => `${kind} ${n}`);
  return `${total}${kinds.length ? ` (${kinds.join(', ')})` : ''}`;
}

function mirrorsOf(host: Host): HostMirrors {
  const apiKeys: [string, string][] = [];
  for (const provider of KEYED_PROVIDERS) {
    const key = host.apiKey?.(provider);
    if (key) apiKeys.push([provider, key]);
  }
  return { ...(host.workspaceRoots ? { workspaceRoots: host.workspaceRoots() } : {}), apiKeys };
}
