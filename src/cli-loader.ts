// dist/cli.js, the command line's entry: it runs the command line's bundle (dist/cli-main.js, built from
// cli.ts) compiled with V8's code cache, which the build writes beside it (esbuild.mjs). Compiling the
// bundle (1.7 MB) without it was the largest single CPU cost of a start (docs/design.md, "Start-up").
import { readFileSync } from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import type { Worker } from 'node:worker_threads';
import { parkStarter, type ParkedStarter } from './git/starter-process';
import { CodeCache } from './platform/code-cache';
import { startHistoryWorker } from './store/history/start-worker';

/**
 * How much of a WebAssembly function V8 runs (roughly, bytes of its code executed) before its optimizing
 * compiler (TurboFan) compiles it again in the background: V8's default (1.8 MB) made both SQLites
 * (sql.js here, node-sqlite3-wasm in history.db's worker) compile their parser and VM while a start
 * opened its store and warmed up, about 0.9 s of CPU on V8's threads, which on a loaded machine took
 * the cores from the start itself (one session's threads share its CPU) and held Node's fetch, whose
 * HTTP parser (WebAssembly too) waited 1.7-4.5 s behind them (issue 25, docs/design.md "The first chat
 * after start, again"). With the largest budget only what stays hot (a long query, a big import) is
 * compiled again; the rest runs as first compiled (Liftoff), about a third slower in SQLite's own code.
 */
const SQLITE_TIERING_BUDGET = 2147483647;
/**
 * V8's own default of the budget (`node --v8-options`), what the flag is set back to so that V8's flags
 * are its defaults again: 1.8 MB in V8 11 (Node 20), 13 MB in V8 12 and 13 (Node 22, 24). Undefined for
 * a V8 not known here: SQLite is then not compiled ahead (a flag left off its default would cost every
 * built-in module's code cache and the bundle's). A test checks it against the running Node.
 */
export function defaultTieringBudget(v8Version = process.versions.v8): number | undefined {
  const major = Number.parseInt(v8Version, 10);
  if (major === 11) return 1_800_000;
  if (major === 12 || major === 13) return 13_000_000;
  return undefined;
}
/** Both SQLites' WebAssembly, beside this file (esbuild.mjs copies them to dist/). */
const SQLITE_WASM = { sqlJs: 'sql-wasm.wasm', historyDb: 'node-sqlite3-wasm.wasm' } as const;

/**
 * Both SQLites compiled here, with the large tiering budget, and V8's flags set back to their defaults
 * at once. A module keeps the budget it was compiled with (V8 reads it as it makes the module's code),
 * and V8 gives a later compile of the same bytes that very module while it lives (its module cache:
 * sql.js's `instantiate` on this thread, node-sqlite3-wasm's in history.db's worker, which keeps its
 * module in `workerData`). Before s14 the flag was set for the whole life of the process; V8 then
 * refused the code cache of every Node built-in module loaded after it (`NODE_DEBUG_NATIVE=CODE_CACHE`
 * says "rejected"), which compiled them from their source, in both threads (docs/design.md, "Start-up
 * to ready, again (s14, ready14)"). Compiled synchronously: with V8's lazy compilation that
 * decodes the bytes only (4-6 ms for both); each function is compiled at its first call, as before.
 * Undefined when a file cannot be read or compiled: each engine then loads as without this.
 */
export function compileSqliteAhead(dir = __dirname): { sqlJs: WebAssembly.Module; historyDb: WebAssembly.Module } | undefined {
  const restore = defaultTieringBudget();
  if (restore === undefined) return undefined;
  let bytes: Uint8Array<ArrayBuffer>[];
  try {
    // Views of the buffers as read (never a shared memory): a copy of them (1.9 MB of fresh memory) cost
    // 6 ms of this thread, and V8 copies the bytes it compiles anyway.
    bytes = [SQLITE_WASM.sqlJs, SQLITE_WASM.historyDb].map((file) => {
      const read = readFileSync(path.join(dir, file));
      return new Uint8Array(read.buffer as ArrayBuffer, read.byteOffset, read.byteLength);
    });
  } catch {
    return undefined;
  }
  v8.setFlagsFromString(`--wasm-tiering-budget=${SQLITE_TIERING_BUDGET}`);
  try {
    const [sqlJs, historyDb] = bytes.map((b) => new WebAssembly.Module(b));
    return { sqlJs, historyDb };
  } catch {
    return undefined;
  } finally {
    v8.setFlagsFromString(`--wasm-tiering-budget=${restore}`);
  }
}

const BUNDLE = path.join(__dirname, 'cli-main.js');
/** Written by the build (esbuild.mjs: `writeCodeCache`, after a rehearsed start), read at every start. */
const cache = new CodeCache(BUNDLE, `${BUNDLE}.cache`);

/**
 * A rehearsal that hangs (a stuck fsync) must not hang the build: its cache is written with what was
 * compiled. Longer than the rehearsal's own waits together (30 s for the warm-up and for each of its three
 * commands, cli-rehearsal.ts), so that one of them gives up first and says which.
 */
const REHEARSAL_LIMIT_MS = 150_000;

type Main = (argv: string[], started?: { historyWorker?: Worker; sqlJs?: WebAssembly.Module; gitStarter?: ParkedStarter }) => Promise<number>;
interface Rehearsal {
  answered: string[];
  warmedUp: boolean;
}
interface Bundle {
  main: Main;
  rehearseStart(): Promise<Rehearsal>;
  rehearsalShortfall(rehearsal: Rehearsal): string | undefined;
}

/**
 * The build's step (esbuild.mjs, in a process of its own): loads the bundle as a start does, which
 * compiles what its modules run as they load, then rehearses one start (cli-rehearsal.ts: a temporary
 * data directory, a loopback port, a client's first commands, the warm-up, a stop), which compiles the
 * functions a start runs, and writes all that code to the cache. A rehearsal that fails or is not whole
 * (no loopback in a sandbox) is said on stderr and answered (the cache then holds another path than a
 * start's: a production build fails on it, esbuild.mjs); undefined when it was whole.
 */
export async function writeCodeCache(): Promise<string | undefined> {
  // Stamped as the bundle was read: a bundle rewritten during the rehearsal (`npm run watch`) must not get
  // the old code's cache under its own stamp (V8 checks only the source's length).
  const before = cache.stamp();
  const script = cache.compile(undefined);
  const { rehearseStart, rehearsalShortfall } = cache.run<Bundle>(script);
  let bounded: NodeJS.Timeout | undefined;
  const outOfTime = new Promise<never>((_, reject) => {
    bounded = setTimeout(() => reject(new Error(`no end after ${REHEARSAL_LIMIT_MS / 1000} s`)), REHEARSAL_LIMIT_MS);
  });
  const problem = await Promise.race([rehearseStart(), outOfTime])
    .then(rehearsalShortfall, (error: unknown) => (error instanceof Error ? error.message : String(error)))
    .finally(() => clearTimeout(bounded));
  if (problem !== undefined) console.error(`the code cache's rehearsal of a start was not whole (the cache holds another path than a start's): ${problem}`);
  if (!before.equals(cache.stamp())) {
    console.error('the bundle changed while its code cache was made: no cache written');
    return problem;
  }
  cache.write(script, before);
  return problem;
}

if (require.main === module) {
  const argv = process.argv.slice(2);
  const serving = argv[0] === 'serve';
  // First: the fork is of this process at its smallest (starter-process.ts).
  const gitStarter = serving ? parkStarter() : undefined;
  // Before the worker starts: its SQLite's compile then finds the module compiled here.
  const sqlite = serving ? compileSqliteAhead() : undefined;
  // history.db's worker loads its SQLite (and ICU's time zone data) while this thread loads the service, rather than after.
  const historyWorker = serving ? startHistoryWorker({ loadTimeZones: true, compiledSqlite: sqlite?.historyDb }) : undefined;
  const script = cache.compile(cache.read());
  const { main } = cache.run<Bundle>(script);
  main(argv, { historyWorker, sqlJs: sqlite?.sqlJs, gitStarter }).then((code) => process.exit(code));
}
