// The service thread's bundle load as thread-loader.ts does it, in a fresh worker_threads Worker each time:
// read dist/service-thread-main.js, compile it (no code cache: an editor's first start), run it (its
// modules' top-level code). Two builds take turns, round by round, so the machine's load falls on both.
// `B=<checkout or dist dir> [A=<another>] [ROUNDS=15] [CPU=1] npx tsx bench/thread-load.ts` (B defaults to
// this checkout). Build both first with `node esbuild.mjs --production`. Prints each side's medians (ms)
// and the load average before and after. CPU=1: each load in a fresh process instead (`node -e`), timed
// in the process's CPU time (process.cpuUsage), which other sessions' load on the cores disturbs far less
// than the wall clock.
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { fmt } from './util';

const ROUNDS = Number(process.env.ROUNDS ?? 15);

/** The bundle of a checkout (its dist/) or of a dist directory itself. */
function bundleOf(dir: string): string {
  const direct = path.resolve(dir, 'service-thread-main.js');
  return existsSync(direct) ? direct : path.resolve(dir, 'dist', 'service-thread-main.js');
}

// CommonJS, run by the Worker as its script (eval): as code-cache.ts's compile and run, timed.
const PROBE = `
const { parentPort, workerData } = require('node:worker_threads');
const cpu = process.env.BENCH_CPU === '1';
const now = () => (cpu ? (({ user, system }) => (user + system) / 1000)(process.cpuUsage()) : performance.now());
const fs = require('node:fs'); const vm = require('node:vm'); const path = require('node:path');
const { createRequire } = require('node:module');
const bundle = workerData ?? process.argv[1];
const t0 = now();
const text = fs.readFileSync(bundle, 'utf8');
const t1 = now();
const script = new vm.Script(text, { filename: bundle });
const t2 = now();
const module = { exports: {} };
script.runInThisContext().call(module.exports, module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
const t3 = now();
const load = { read: t1 - t0, compile: t2 - t1, run: t3 - t2, total: t3 - t0 };
if (parentPort) parentPort.postMessage(load);
else console.log(JSON.stringify(load));
`;

type Load = { read: number; compile: number; run: number; total: number };

function once(bundle: string): Promise<Load> {
  if (process.env.CPU === '1') {
    return Promise.resolve(JSON.parse(execFileSync(process.execPath, ['-e', PROBE, bundle], { env: { ...process.env, BENCH_CPU: '1' }, encoding: 'utf8' })) as Load);
  }
  return new Promise((resolve, reject) => {
    const worker = new Worker(PROBE, { eval: true, workerData: bundle });
    worker.once('message', (load: Load) => {
      resolve(load);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const loadNow = () =>
  loadavg()
    .map((l) => fmt(l, 1))
    .join(' ');

async function main(): Promise<void> {
  const sides = Object.entries({ A: process.env.A, B: process.env.B ?? '.' })
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([name, dir]) => ({ name, bundle: bundleOf(dir), runs: [] as Load[] }));
  const before = loadNow();
  for (let i = 0; i < ROUNDS; i += 1) {
    for (const side of i % 2 === 0 ? sides : [...sides].reverse()) side.runs.push(await once(side.bundle));
  }
  console.log(`${ROUNDS} rounds${process.env.CPU === '1' ? ' (CPU ms, a process each)' : ''}, load average ${before} -> ${loadNow()}`);
  for (const side of sides) {
    const row = (['read', 'compile', 'run', 'total'] as const).map((key) => `${key} ${fmt(median(side.runs.map((r) => r[key])), 1)}`).join('  ');
    console.log(`${side.name} ${side.bundle}: ${row}`);
  }
}

void main();
