// The service as the command line and the editor run it: esbuild's bundle (dist/bench-service.js, made by
// `npm run build`), not tsx's transform of src. tsx compiles with esbuild's `keepNames`, which wraps every
// named function and closure in a call that defines its `name` each time one is made: on a turn's path
// that is work the shipped code does not do (docs/design.md, "(s20, turn20d)"). `BENCH_SOURCE=1` runs src
// through tsx instead (the method before s20), to compare.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Service as SourceService } from '../src/service';

const BUNDLE = join(__dirname, '..', 'dist', 'bench-service.js');

/** Which code the bench runs, for its printed line. */
export const runsBundle = process.env.BENCH_SOURCE !== '1';

/** The `Service` class the benches open: the bundle's unless BENCH_SOURCE=1. */
export function serviceClass(): typeof SourceService {
  if (!runsBundle) return (require('../src/service') as typeof import('../src/service')).Service;
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run \`npm run build\` first (or BENCH_SOURCE=1 to run src through tsx)`);
  if (statSync(BUNDLE).mtimeMs < newestSource()) console.warn(`bench: ${BUNDLE} is older than a file of src: run \`npm run build\``);
  return (require(BUNDLE) as typeof import('../src/service')).Service;
}

/**
 * The password checks running and waiting in the service the benches open: the bundle's own passwords
 * module (bench/bundle-entry.ts), or src's with BENCH_SOURCE=1. Importing it from src while the bundle runs
 * reads a module the service never uses.
 */
export function derivationLoad(): { running: number; waiting: number } {
  if (!runsBundle) return (require('../src/transport/auth/passwords') as typeof import('../src/transport/auth/passwords')).derivationLoad();
  return (require(BUNDLE) as typeof import('./bundle-entry')).derivationLoad();
}

/** The latest change time of a file under src/. */
function newestSource(): number {
  const src = join(__dirname, '..', 'src');
  let newest = 0;
  for (const name of readdirSync(src, { recursive: true, encoding: 'utf8' })) newest = Math.max(newest, statSync(join(src, name)).mtimeMs);
  return newest;
}
