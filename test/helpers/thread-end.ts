import type { Worker } from 'node:worker_threads';

/**
 * How `worker` ended (platform/worker-thread.ts: our threads are ended by terminate, never by their own
 * exit). Its `terminate` is held back `holdMs`, so that a thread that would leave by itself (its port
 * closed, its loop empty) has the time to: `byItself` then, and its exit code 0 (a terminated thread's is 1).
 */
export function watchEnd(worker: Worker, holdMs = 300): Promise<{ code: number; byItself: boolean }> {
  let terminated = false;
  const terminate = worker.terminate.bind(worker);
  worker.terminate = () =>
    new Promise<number>((resolve) =>
      setTimeout(() => {
        terminated = true;
        resolve(terminate());
      }, holdMs),
    );
  return new Promise((resolve) => worker.once('exit', (code) => resolve({ code, byItself: !terminated })));
}
