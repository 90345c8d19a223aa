import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { processNonce } from './process-nonce';

/**
 * Starts one of our worker threads (the store's, the service's in the editor): `<name>.ts` in `sourceDir`
 * when running from source, `dist/<name>.js` (emitted by esbuild beside the bundle) when bundled.
 *
 * Ended by terminate, never by its own exit: a thread that is done says so and waits, its port open, and
 * the thread that started it calls `terminate()`. On Node 20 a thread that leaves by itself (its port
 * closed, its loop empty) runs JavaScript on the way out (the port's and the process's exit events); a
 * function of it that V8 had marked hot is then compiled on a background thread, and if that compile
 * needs a garbage collection of the exiting thread's heap, it waits for the thread, which waits in
 * `NodePlatform::DrainTasks` for every background task of the process: both wait for good, and so does
 * every thread that ends after them (nodejs/node#54918; the stacks are in docs/design.md, "Threads end by
 * terminate", s30). A terminated thread runs no JavaScript on its way out.
 */
export function startWorkerThread(name: string, sourceDir: string, workerData?: unknown): Worker {
  // Made (on the main thread) before the thread, which gets it with its copy of process.env: the locks the
  // thread takes are then known for this process's (lock-file.ts), not for an earlier one's with our pid.
  processNonce();
  if (__filename.endsWith('.ts')) {
    // From source (tsx): a worker does not get tsx' hooks for its entry file even though it inherits
    // `--import tsx`, so a tiny CommonJS bootstrap registers tsx and then loads the TypeScript entry.
    const entry = path.join(sourceDir, `${name}.ts`);
    const tsx = require.resolve(['tsx', 'cjs'].join('/')); // not a literal: esbuild must not resolve it
    return new Worker(`require(${JSON.stringify(tsx)}); require(${JSON.stringify(entry)});`, { eval: true, workerData });
  }
  return new Worker(path.join(__dirname, `${name}.js`), { workerData });
}

/**
 * In a thread's entry: its port, listened to for good, keeps the thread until the thread that started it
 * terminates it (startWorkerThread: ended by terminate, never by its own exit).
 */
export function stayUntilTerminated(port: MessagePort): void {
  port.on('message', () => {});
}
