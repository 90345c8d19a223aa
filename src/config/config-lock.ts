import { join } from 'node:path';
import type { Logger } from '../log/logger';
import { acquireLock, DataDirInUseError, LockedByOtherHostError } from '../platform/lock-file';
import { CONFIG_FILE_NAME } from '../platform/paths';

export const CONFIG_LOCK_FILE_NAME = `${CONFIG_FILE_NAME}.lock`;
/** A writer holds the lock for one read, validate and atomic write: milliseconds. */
const STALE_AFTER_MS = 10_000;
/** Longer than STALE_AFTER_MS, so a lock left by a dead writer of another host is taken over while waiting. */
const WAIT_LIMIT_MS = 15_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `task` holding `service.json.lock`, so read-modify-writes of service.json by several processes
 * (the running service, `user add`, an editor's service) happen one at a time. The task must read the
 * file again under the lock: what it read before may be stale. A holder that died is detected by the
 * store's lock rules (its pid on this host), or by age wherever it ran.
 */
export async function withConfigLock<T>(dataDir: string, logger: Logger, task: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + WAIT_LIMIT_MS;
  for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
    let lock;
    try {
      lock = await acquireLock(dataDir, logger, join(dataDir, CONFIG_FILE_NAME), { fileName: CONFIG_LOCK_FILE_NAME, staleAfterMs: STALE_AFTER_MS });
    } catch (error) {
      if (!(error instanceof DataDirInUseError || error instanceof LockedByOtherHostError)) throw error;
      if (Date.now() > deadline) throw new Error(`${CONFIG_FILE_NAME} is being changed by process ${error.pid}; try again`);
      await sleep(delay * (0.5 + Math.random())); // jitter: waiters do not retry in lockstep
      continue;
    }
    try {
      return await task();
    } finally {
      await lock.release();
    }
  }
}
