import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import initSqlJs from 'sql.js';
import type { Database as SqlJsDatabase, SqlJsStatic } from 'sql.js';

let ready: Promise<SqlJsStatic> | undefined;
/** sql.js's WebAssembly as the command line's entry compiled it (useCompiledSqlJs), if it did. */
let compiled: WebAssembly.Module | undefined;

/**
 * sql.js's WebAssembly compiled by the command line's entry before the service loads (cli-loader.ts,
 * `compileSqliteAhead`: with the tiering budget SQLite runs with): this thread's load instantiates it
 * rather than compiling the bytes again.
 */
export function useCompiledSqlJs(module: WebAssembly.Module | undefined): void {
  compiled = module;
}

/**
 * Where the sql.js WASM binary is: beside the bundle (esbuild copies it to dist/), else in
 * node_modules when running from source.
 */
export function locateSqlJsWasm(): string {
  const beside = path.join(__dirname, 'sql-wasm.wasm');
  if (existsSync(beside)) return beside;
  try {
    // Built at run time so esbuild does not try (and warn) to resolve it at bundle time.
    return require.resolve(['sql.js', 'dist', 'sql-wasm.wasm'].join('/'));
  } catch {
    throw new Error(`sql-wasm.wasm not found: neither at ${beside} nor in node_modules/sql.js`);
  }
}

/** Loads sql.js once per thread; later calls share the same promise (a failed load may be retried). */
export function loadSqlJs(): Promise<SqlJsStatic> {
  if (!ready) {
    const attempt = (async () => {
      const module = compiled;
      if (module) {
        // sql.js calls instantiateWasm inside a promise of its own that nobody rejects, and keeps its first
        // load for the process: a module that cannot be instantiated (imports not matching the glue,
        // memory refused) is replaced here by one compiled from the bytes, as without it; if that fails
        // too, the load is refused rather than left pending for ever.
        let refuse: (error: unknown) => void = () => {};
        const refused = new Promise<never>((_, reject) => (refuse = reject));
        const loaded = initSqlJs({
          instantiateWasm: (imports, receive) => {
            let instance: WebAssembly.Instance;
            try {
              instance = new WebAssembly.Instance(module, imports);
            } catch {
              try {
                instance = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(locateSqlJsWasm())), imports);
              } catch (error) {
                refuse(error);
                return {};
              }
            }
            receive(instance);
            return instance.exports;
          },
        });
        return Promise.race([loaded, refused]);
      }
      const bytes = await readFile(locateSqlJsWasm());
      // Handing the bytes over avoids sql.js' own fetch/locateFile logic, which differs per platform.
      const wasmBinary = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
      return initSqlJs({ wasmBinary });
    })();
    ready = attempt;
    attempt.catch(() => {
      if (ready === attempt) ready = undefined;
    });
  }
  return ready;
}

/**
 * Keeps SQLite's lock on the database's in-memory file between statements. In the default mode every
 * statement that reads a table takes and drops a lock and looks for a hot journal and a changed file
 * through sql.js's emulated file system (about 40 us a statement here; 1-2 us with the lock kept). One
 * connection in one thread owns that file: nobody else could change it.
 */
export function keepLock(db: SqlJsDatabase): void {
  db.run('PRAGMA locking_mode = EXCLUSIVE');
}

/**
 * Commits skip their sync of the database's file (PRAGMA synchronous = OFF): the file is sql.js's emulated
 * one in this process's memory, whose sync makes nothing durable and only costs calls at every commit. What
 * makes a write durable is the journal's fdatasync (journal.ts). 1-3 us a message in a turn (s18, turn18c).
 */
export function skipSyncs(db: SqlJsDatabase): void {
  db.run('PRAGMA synchronous = OFF');
}
