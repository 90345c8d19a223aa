// sql.js's SQLite compiled while a start waits for its files, not during the store's open. V8 compiles
// a WebAssembly function at its first call, on the calling thread: the open's first statements (the
// snapshot's `meta` check, a new directory's schema) compiled SQLite's parser, code generator and
// B-tree on the main thread after the service listened, on ready's path (docs/design.md, "Start-up",
// "The open's SQLite compiled in the begin's waits (s20, ready20c)"). The same statements run here on a
// throwaway database in memory, one a turn of the event loop (setImmediate), from the moment sql.js is
// loaded (bootStore) until the open begins its own (Database.open ends it): the turns fall in the
// waits of service.json's write and fsyncs and of taking the lock, when the thread would be idle, and a
// file's callback waits for one statement at most. Nothing of the data directory is read or written.
import { loadSqlJs } from './sqljs';
import { SCHEMA_SQL } from './schema';

let warming: { controller: AbortController; done: Promise<boolean> } | undefined;

/**
 * Starts the warm-up, or answers the one under way: resolves with whether it ran whole (false: ended by
 * the open first, or sql.js failed to load, which is the open's to report). Never rejects.
 */
export function warmSqlJs(): Promise<boolean> {
  if (warming) return warming.done;
  const controller = new AbortController();
  const done = run(controller.signal).catch(() => false);
  const current = { controller, done };
  warming = current;
  void done.then(() => {
    if (warming === current) warming = undefined;
  });
  return done;
}

/** Ends the warm-up where it is (the open's own statements begin): the statement under way is its last. */
export function endSqlJsWarmUp(): void {
  warming?.controller.abort();
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function run(signal: AbortSignal): Promise<boolean> {
  const SQL = await loadSqlJs();
  if (signal.aborted) return false;
  const db = new SQL.Database();
  try {
    // As Database.open and a new directory's migration (fromSchema) run them.
    const steps = [
      "SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
      'PRAGMA journal_mode = MEMORY',
      'PRAGMA locking_mode = EXCLUSIVE',
      'PRAGMA synchronous = OFF',
      'PRAGMA user_version',
      'BEGIN',
    ];
    for (const sql of steps) {
      await turn();
      if (signal.aborted) return false;
      db.run(sql);
    }
    for (const statement of db.iterateStatements(SCHEMA_SQL)) {
      try {
        await turn();
        if (signal.aborted) return false;
        statement.step();
      } finally {
        statement.free();
      }
    }
    await turn();
    if (signal.aborted) return false;
    db.run('COMMIT');
    return true;
  } finally {
    db.close();
  }
}
