// The service's thread started as the extension's bundle loads, before VS Code calls activate(): the
// thread's isolate and Node's bootstrap (45-85 ms here, several times that while the editor starts) run on
// their own thread beside the loading of extension.js and activate()'s own work, instead of after them. The
// thread only waits for its `boot` (what it serves comes from activate(): the data directory is the
// extension's storage), so it does nothing before a hosting takes it (HostedService.begin); one not taken
// (hosting off, the editor's own tests) is ended, and never holds its process open.
import type { Worker } from 'node:worker_threads';
import { startWorkerThread } from '../platform/worker-thread';

let early: Worker | undefined;

/** Starts the service's thread ahead of its hosting (once; later hostings start their own). */
export function startEarly(): void {
  if (early) return;
  const worker = startWorkerThread('service-thread', __dirname);
  // Unless a hosting takes it, it must not keep its process alive (a test that loads the extension and ends).
  worker.unref();
  early = worker;
  // A thread that ends (or fails loading its bundle) before a hosting takes it is not handed over: the
  // hosting, which listens for its end only once taken, would wait for it forever (review28b), and its
  // error, heard by nobody, would be thrown in the extension host. The hosting starts a thread of its own.
  const gone = () => {
    if (early === worker) early = undefined;
  };
  worker.once('exit', gone);
  worker.once('error', gone);
}

/** The thread started ahead, for the hosting that starts now; undefined when none waits (then it starts its own). */
export function takeEarly(): Worker | undefined {
  const taken = early;
  early = undefined;
  taken?.ref();
  return taken;
}

/** The thread started ahead while none has taken it (tests look without taking it). */
export function earlyWaiting(): Worker | undefined {
  return early;
}

/** Ends the thread started ahead when nothing will take it (activate() found hosting off, deactivate()). */
export function dropEarly(): void {
  void early?.terminate();
  early = undefined;
}
