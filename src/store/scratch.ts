import { nullLogger } from '../log/logger';
import { AttachmentHolds } from './attachment-holds';
import { AuditRepo } from './audit';
import { MemoryBlobs } from './blob-store';
import { Database } from './database';
import { HistoryMaintenance } from './history/maintenance';
import { repositories, type Store } from './index';
import { migrate, MIGRATIONS } from './migrations';
import { SCHEMA_SQL, SCHEMA_VERSION } from './schema';
import { UsageRepo } from './usage';

/**
 * A store that keeps nothing, for the service's warm-up to practise a turn on (service.ts): the same
 * repositories, Database and HistoryStore code as `real`'s, over sql.js in memory made from the same
 * schema (journaled nowhere: Journal.scratch) and a database in memory in `real`'s history worker
 * (HistoryStore.scratch). V8 compiles per function, not per object, so a turn stored here compiles
 * what the first chat's turn would run for the first time, and nothing reaches service.db, its journal,
 * history.db, the blobs (MemoryBlobs) or the log. Made a statement a turn of the event loop (until `signal` aborts); `close` drops it.
 */
export async function openScratchStore(real: Store, signal?: AbortSignal): Promise<Store> {
  const db = await Database.scratch(SCHEMA_SQL, signal);
  const history = real.history.scratch();
  try {
    // The schema's version, then any migration after it, as a new data directory's open does (migrate).
    await db.write((tx) => tx.run(`PRAGMA user_version = ${SCHEMA_VERSION}`));
    await migrate(db, MIGRATIONS);
  } catch (error) {
    await Promise.allSettled([db.close(), history.close()]);
    throw error;
  }
  const audit = new AuditRepo(db);
  const usage = new UsageRepo(db, history);
  // Blobs in memory: none of the practice's reaches the data directory, whatever its turn would store.
  const blobs = new MemoryBlobs();
  return {
    ...repositories(db, history, { audit, usage, blobs, kick: () => undefined, holds: new AttachmentHolds() }),
    backup: () => Promise.reject(new Error('a scratch store has no backup')),
    history,
    // Never started: a scratch store has nothing to sweep or move.
    maintenance: new HistoryMaintenance(db, history, { logger: nullLogger, audit, usage }),
    problem: async () => null,
    close: async () => {
      await db.close();
      await history.close();
    },
  };
}
