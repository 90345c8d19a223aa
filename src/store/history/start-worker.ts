import type { Worker } from 'node:worker_threads';
import { startWorkerThread } from '../../platform/worker-thread';

/** What a history worker does at its start besides loading its SQLite (`workerData`). */
export interface HistoryWorkerStart {
  /**
   * Loads ICU's time zone data while it waits for its first message (history-worker.ts): for a worker
   * started before the service loads (cli-loader.ts), which has that time to spare.
   */
  loadTimeZones?: boolean;
  /**
   * node-sqlite3-wasm's WebAssembly as the command line's entry compiled it (cli-loader.ts,
   * `compileSqliteAhead`). Kept by the worker for its life, only so that the library's own compile of
   * the same bytes gets this module from V8's module cache (the cache holds a module while one lives),
   * with the tiering budget it was compiled with.
   */
  compiledSqlite?: WebAssembly.Module;
}

/**
 * A history worker (history-worker.ts) that loads its SQLite and waits for `HistoryStore.boot(worker).open`.
 * A module of its own, so the command line's small entry (cli-loader.ts) can start one without loading
 * the store.
 */
export function startHistoryWorker(start: HistoryWorkerStart = {}): Worker {
  return startWorkerThread('history-worker', __dirname, start);
}
