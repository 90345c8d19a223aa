// This process's nonce: a random id that every thread of the process shares and that no other process has,
// not even a later one given the same pid (pids are reused, quickly on Windows). The data directory's lock
// records it: a lock with our pid and another thread is held by a live thread of ours only if its nonce is
// ours (docs/design.md, "A stale lock of our own pid on macOS and Windows").
//
// The main thread makes it when this module loads and puts it in process.env, which a worker thread gets a
// copy of when it is made: a worker started after the load (startWorkerThread loads it first) shares it.
// A child process inherits the env too, so a main thread never takes an inherited one: it makes its own.
import { randomBytes } from 'node:crypto';
import { isMainThread } from 'node:worker_threads';

const ENV_NAME = 'REMOTE_ASSISTANT_PROCESS_NONCE';
/** Where this thread keeps it: shared by every copy of this module the thread loads (two bundles, say). */
const SLOT = Symbol.for('remote-assistant.process-nonce');

function nonceOfThisThread(): string | null {
  const slot = globalThis as { [SLOT]?: string | null };
  if (slot[SLOT] !== undefined) return slot[SLOT];
  let nonce: string | null;
  if (isMainThread) {
    // The pid in it lets a worker tell ours from one its process inherited from its parent.
    nonce = `${process.pid}.${randomBytes(16).toString('hex')}`;
    process.env[ENV_NAME] = nonce;
  } else {
    // Started before its main thread loaded this module, a worker sees none, or its parent process's
    // (another pid): it has none then, and the lock judges its locks as it did before there were nonces.
    const inherited = process.env[ENV_NAME];
    nonce = inherited !== undefined && /^\d+\.[0-9a-f]{32}$/.test(inherited) && inherited.startsWith(`${process.pid}.`) ? inherited : null;
  }
  slot[SLOT] = nonce;
  return nonce;
}

nonceOfThisThread();

/** This process's nonce, or null on a worker thread that was started before its main thread made it. */
export function processNonce(): string | null {
  return nonceOfThisThread();
}
