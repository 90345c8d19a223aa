import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { processNonce } from './process-nonce';

/**
 * Starts one of our worker threads (the store's, the service's in the editor): `<name>.ts` in `sourceDir`
 * when running from source, `dist/<name>.js` (emitted by esbuild beside the bundle) when bundled.
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
