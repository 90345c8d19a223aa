// The service's worker thread in the editor's extension host (bundled to dist/service-thread-main.js, which
// thread-loader.ts runs; started by hosted-service.ts). It opens the Service as
// the extension did in process, its host's parts (the editor's models, tools, terminal, folders and keys)
// answered by the extension host's thread over this thread's port (wire.ts).
import { parentPort } from 'node:worker_threads';
import type { OpenSession } from '../commands/door';
import { fail, requestIdOf } from '../protocol';
import { DeltaWindow } from '../protocol/delta-window';
import { TickBatch } from '../protocol/tick-batch';
import { Service } from '../service';
import { applyLanAccess } from '../config/lan-access';
import { HostCalls } from './host-calls';
import { LoopMonitor, threadSched } from '../extension/diagnostics';
import { wallNow, type LoaderMarks } from './start-marks';
import { toWire, type Batched, type FromThread, type ThreadStart, type ToThread } from './wire';

const port = parentPort!;
/**
 * The sessions' events and answers cross joined, those of one turn of this loop as one message (TickBatch);
 * anything else goes alone, after what waits, so the order is the order they were sent in.
 */
const batch = new TickBatch<Batched>((messages) => port.postMessage(messages.length === 1 ? messages[0] : ({ t: 'batch', messages } satisfies FromThread)));
function post(message: FromThread): void {
  if (message.t === 'event' || message.t === 'response') return batch.push(message);
  batch.flush();
  port.postMessage(message);
}

/**
 * Calls `then` with what the thread is to serve: the first message the editor sends it (`boot`).
 */
export function whenBooted(then: (start: ThreadStart) => void): void {
  const first = (message: ToThread) => {
    if (message.t !== 'boot') return;
    port.off('message', first);
    then(message.start);
  };
  port.on('message', first);
}

let hostReady: () => void = () => undefined;
const hostReadyPromise = new Promise<void>((resolve) => (hostReady = resolve));
let start: ThreadStart;
let loading: LoaderMarks | undefined;
let begunAt = 0;
let calls: HostCalls;
const sessions = new Map<number, { session: OpenSession; events: DeltaWindow }>();
let service: Service | undefined;
let stopping: Promise<void> | undefined;
let warm: (whole: boolean) => void = () => undefined;
/**
 * Measure Responsiveness's monitor of this thread's loop (the one that answers the phone, the sockets, the
 * webhooks). Its accounting is read afresh at each sample, no file kept open: a worker's raw fd outlives the
 * thread, and a thread ended while measuring (Restart Service, a crash) leaked it (review28b).
 */
const loop = new LoopMonitor(threadSched);
/** Settles once the service's warm-up is over (or it never began): the thread's loader then writes its code cache (thread-loader.ts). */
export const warmedUp = new Promise<boolean>((resolve) => (warm = resolve));

/** Its config, now and at every change (the editor reads it: its tools' folders, its default provider, get_config's fields). */
function mirror(service: Service, fields: string[]): void {
  post({ t: 'config', config: service.config.current, fields });
}

async function begin(): Promise<void> {
  try {
    service = await Service.begin({
      dataDir: start.dataDir,
      port: start.port,
      host: start.host,
      hostServices: calls.host,
      hostReady: hostReadyPromise,
      // The extension's figure is activate() -> listening: the SQLite engines load after the bind.
      enginesAfterLock: true,
    });
  } catch (error) {
    warm(false);
    post({ t: 'begin-failed', error: toWire(error) });
    return;
  }
  const opened = service;
  void opened.warmedUp.then(warm);
  begunAt = wallNow();
  mirror(opened, []);
  post({ t: 'secrets', secrets: opened.redactor.secrets() });
  opened.config.on('change', (fields) => mirror(opened, fields));
  opened.redactor.onChange = () => post({ t: 'secrets', secrets: opened.redactor.secrets() });
  post({ t: 'begun' });
  // Not once the editor asked it to stop (Stop Service while the lock was being taken).
  if (start.listen && !stopping) listen(opened);
  opened.ready.then(
    () => post({ t: 'ready' }),
    (error: unknown) => post({ t: 'ready-failed', error: toWire(error) }),
  );
}

/** Listens: the first time with the start's marks (the editor logs them), told `started` or `start-failed`. */
function listen(opened: Service): void {
  const marks = loading && { ...loading, begun: begunAt };
  loading = undefined;
  opened.start().then(
    (address) => post({ t: 'started', address, ...(marks ? { marks: { ...marks, listening: wallNow() } } : {}) }),
    (error: unknown) => post({ t: 'start-failed', error: toWire(error) }),
  );
}

function stop(): Promise<void> {
  stopping ??= (async () => {
    // The editor's sessions are closed by the graceful stop itself, after their turns' last events (onClose).
    try {
      await service?.stop();
      post({ t: 'stopped' });
    } catch (error) {
      post({ t: 'stopped', error: toWire(error) });
    }
    calls.close();
    // The port stays open: the editor's side terminates this thread once it heard `stopped`
    // (platform/worker-thread.ts: ended by terminate).
  })();
  return stopping;
}

function receive(message: ToThread): void {
  switch (message.t) {
    case 'start':
      if (service) listen(service);
      return;
    case 'stop':
      void stop();
      return;
    case 'host-ready':
      hostReady();
      return;
    case 'mirrors':
      calls.mirrors = message.mirrors;
      return;
    case 'tools-changed':
      calls.toolsChanged(message.source);
      return;
    case 'lan': {
      const rid = message.rid;
      if (!service) return post({ t: 'lan-done', rid, error: { name: 'Error', message: 'the service is not running' } });
      applyLanAccess(service.config, message.enabled).then(
        (changed) => post({ t: 'lan-done', rid, changed }),
        (error: unknown) => post({ t: 'lan-done', rid, error: toWire(error) }),
      );
      return;
    }
    case 'monitor':
      if (message.on) loop.start();
      else post({ t: 'loop-figures', figures: loop.stop() });
      return;
    case 'session-open': {
      if (!service || stopping) return post({ t: 'session-closed', sid: message.sid });
      const sid = message.sid;
      const wanted = message.events && new Set<string>(message.events);
      // A chat's pieces cross joined (each crossing is a task of the extension host's loop).
      const events = new DeltaWindow((event) => post({ t: 'event', sid, event }));
      // The editor itself (its commands, its chat views): the owner, as it hosts the service and holds the
      // access token; it hears and answers permission requests like any client.
      const session = service.openSession({
        source: { kind: 'editor' },
        principal: 'access',
        canAnswerPermissions: true,
        send: (event) => {
          if (!wanted || wanted.has(event.event)) events.push(event);
        },
        onClose: () => {
          events.flush();
          sessions.delete(sid);
          post({ t: 'session-closed', sid });
        },
      });
      sessions.set(sid, { session, events });
      return;
    }
    case 'session-request': {
      const open = sessions.get(message.sid);
      const rid = message.rid;
      if (!open) return post({ t: 'response', rid, envelope: fail('server_error', 'the service is stopping', requestIdOf(message.frame)) });
      // The pieces before the answer go first (a chat's last piece before its response).
      void open.session.request(message.frame).then((envelope) => {
        open.events.flush();
        post({ t: 'response', rid, envelope });
      });
      return;
    }
    case 'session-close': {
      const open = sessions.get(message.sid);
      open?.events.dispose();
      open?.session.close();
      sessions.delete(message.sid);
      return;
    }
    case 'answer':
    case 'piece':
      calls.received(message);
      return;
    default:
      return;
  }
}

/** Serves `given`: the service opened with it, the editor's messages answered. */
export function boot(given: ThreadStart, loaderMarks?: LoaderMarks): void {
  start = given;
  loading = loaderMarks;
  calls = new HostCalls(start, post);
  port.on('message', receive);
  void begin();
}

// From source (tests: startWorkerThread runs this file as the thread's entry) it boots itself; bundled,
// its loader (thread-loader.ts) calls `boot` once it has compiled it.
if (__filename.endsWith('.ts')) whenBooted(boot);
