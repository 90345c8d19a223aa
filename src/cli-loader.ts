// dist/cli.js, the command line's entry: it runs the command line's bundle (dist/cli-main.js, built from
// cli.ts) compiled with V8's code cache, which the build writes beside it (esbuild.mjs). Compiling the
// bundle (1.7 MB) without it was the largest single CPU cost of a start (docs/design.md, "Start-up").
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import vm from 'node:vm';
import type { Worker } from 'node:worker_threads';
import { startHistoryWorker } from './store/history/start-worker';

const BUNDLE = path.join(__dirname, 'cli-main.js');
const CACHE = `${BUNDLE}.cache`;
/**
 * The cache starts with the bundle's size and modification time when it was made: V8 checks only the
 * source's length (and its own version and flags), so a bundle rebuilt without its cache (`npm run
 * watch`) must not get the old one.
 */
const HEADER_BYTES = 16;

function stamp(): Buffer {
  const stat = statSync(BUNDLE);
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeDoubleLE(stat.size, 0);
  header.writeDoubleLE(stat.mtimeMs, 8);
  return header;
}

/** The bundle's cached code when it was made from this very bundle; undefined otherwise. */
function readCache(): Buffer | undefined {
  try {
    const cache = readFileSync(CACHE);
    return cache.subarray(0, HEADER_BYTES).equals(stamp()) ? cache.subarray(HEADER_BYTES) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How much SQLite's WebAssembly (both engines: sql.js here, node-sqlite3-wasm in history.db's worker) runs
 * before V8 compiles a function again with its optimising compiler: 100x V8's default (1,800,000, "bytes
 * executed"). At the default, the few statements of a start made V8 optimise hundreds of SQLite's
 * functions on background threads, 250-300 ms of CPU per engine, most of it between listening and the
 * first command answered, on a 2-core machine beside the open's own work (docs/design.md,
 * "What competes with the open for the cores (s12)"). At 100x, what stays hot for long is still
 * optimised. Set before either engine is instantiated (the budget is each instance's at instantiation), for every command and
 * for the code cache alike (V8 refuses a cache made under other flags).
 */
const WASM_TIERING_BUDGET = 180_000_000;

function setEngineFlags(): void {
  setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);
}

/** The bundle as a CommonJS module body, on one line with its first, so stack traces keep its line numbers. */
function compile(cachedData: Buffer | undefined): vm.Script {
  const source = readFileSync(BUNDLE, 'utf8');
  return new vm.Script(`(function (exports, require, module, __filename, __dirname) { ${source}\n})`, { filename: BUNDLE, cachedData });
}

type Main = (argv: string[], started?: { historyWorker?: Worker }) => Promise<number>;

function run(script: vm.Script): { main: Main } {
  const bundle = { exports: {} as { main: Main } };
  (script.runInThisContext() as (...args: unknown[]) => void).call(bundle.exports, bundle.exports, createRequire(BUNDLE), bundle, BUNDLE, path.dirname(BUNDLE));
  return bundle.exports;
}

/**
 * The build's step (esbuild.mjs, in a process of its own): loads the bundle as a start does, which
 * compiles what its modules run as they load, and writes that code to the cache. Nothing is started.
 */
export function writeCodeCache(): void {
  setEngineFlags();
  const script = compile(undefined);
  run(script);
  writeFileSync(CACHE, Buffer.concat([stamp(), script.createCachedData()]));
}

if (require.main === module) {
  setEngineFlags();
  const argv = process.argv.slice(2);
  // history.db's worker loads its SQLite while this thread loads the service, rather than after.
  const historyWorker = argv[0] === 'serve' ? startHistoryWorker() : undefined;
  const { main } = run(compile(readCache()));
  main(argv, { historyWorker }).then((code) => process.exit(code));
}
