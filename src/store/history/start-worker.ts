import type { Worker } from 'node:worker_threads';
import { startStoreWorker } from '../worker-thread';

/**
 * A history worker (history-worker.ts) that loads its SQLite and waits for `HistoryStore.boot(worker).open`.
 * A module of its own, so the command line's small entry (cli-loader.ts) can start one without loading
 * the store.
 */
export function startHistoryWorker(): Worker {
  return startStoreWorker('history-worker', __dirname, null);
}
