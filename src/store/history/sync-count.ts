// The fsyncs history.db's file layer makes, counted where they happen: node-sqlite3-wasm's VFS calls
// fs.fsyncSync (looked up on the module at each call) from the history worker's thread. The store
// promises one durable commit per acknowledged message, and the tests count the fsyncs behind it
// (HistoryStats.syncs) rather than trusting a commit counter kept beside them.
import fs from 'node:fs';

let syncs = 0;
let installed = false;

/** Starts counting (once per thread; only the history worker calls it). */
export function countSyncs(): void {
  if (installed) return;
  installed = true;
  const fsync = fs.fsyncSync;
  const fdatasync = fs.fdatasyncSync;
  fs.fsyncSync = (fd) => {
    syncs++;
    fsync(fd);
  };
  fs.fdatasyncSync = (fd) => {
    syncs++;
    fdatasync(fd);
  };
}

/** fsync and fdatasync calls made by this thread since countSyncs. */
export function syncCount(): number {
  return syncs;
}
