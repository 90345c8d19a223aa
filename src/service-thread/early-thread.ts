// The service's thread, started as the extension's bundle begins to load (extension.ts imports this
// first): the thread's own start (a new isolate, Node's bootstrap) then runs beside the loading of the
// rest of the bundle instead of after activate() has begun. It waits for its `boot` (wire.ts) from
// HostedService.begin, which takes it; a window that does not host (another one does, or autoStart is
// off) ends it.
import type { Worker } from 'node:worker_threads';
import { startWorkerThread } from '../platform/worker-thread';

let early: Worker | undefined = startWorkerThread('service-thread', __dirname);
// Not a reason for the process to stay: a thread nobody took ends with it.
early.unref();

/** The thread started early, once (undefined after it was taken or ended). */
export function takeEarlyThread(): Worker | undefined {
  const taken = early;
  early = undefined;
  taken?.ref();
  return taken;
}

/** Ends the early thread if nobody took it. */
export function endEarlyThread(): void {
  void takeEarlyThread()?.terminate();
}
