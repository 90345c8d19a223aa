// The follow bench's row (issue 25: the slowest of 100 followers' p99 / the sender's) for several trees
// of this project taking turns, one whole run of each tree's own bench/follow.ts (its service and its
// clients) at a time, the order reversed every round, so that the machine's load falls on all alike.
// `A=/path/to/other/tree npx tsx bench/follow-ab.ts` (B: this tree unless given; C: a third, e.g. one
// tree's service with another's bench; ROUNDS, default 10). `A_ENV` (B_ENV, C_ENV): settings for that side's
// runs only, `NAME=value` separated by spaces, so that one tree can take turns with itself in two
// arrangements (e.g. `A=. A_ENV=FOLLOW_CLIENT_HEAP=old`: the clients' heaps as before s35). Printed: each run's ratio as it ends, then
// for each side every ratio, how many were under 1.5, the medians of the ratio and of the sender's and
// the slowest follower's p50 / p99, and the load average (1 minute) at the runs' starts.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fmt } from './util';

interface Run {
  ratio: number;
  sender: [number, number];
  follower: [number, number];
  load: number;
  /** The clients' threads' collections in the 100-follower stage (count, longest ms), when the tree's bench prints them (s35). */
  clientGc?: { sender: [number, number]; followers: [number, number] };
  /** The ratio with each piece stamped at its thread's wake (s35), when the tree's bench prints it. */
  woke?: number;
}

const ROW = /100 follower\(s\): sender p50 ([\d.]+) ms p99 ([\d.]+) ms; slowest follower p50 ([\d.]+) ms p99 ([\d.]+) ms; p99 ratio ([\d.]+)/;

const WOKE = /stamped at the first read of the thread's wake[^\n]*ratio ([\d.]+)/;
const CLIENT_GC = /gc \(count \/ total \/ longest ms\) the sender's (\d+) \/ [\d.]+ \/ ([\d.]+), the followers' (\d+) \/ [\d.]+ \/ ([\d.]+)/;

/** A side's own settings (`NAME=value NAME=value`), added to this process's environment for its runs. */
const sideEnv = (text: string | undefined): Record<string, string> =>
  Object.fromEntries(
    (text ?? '')
      .split(' ')
      .filter((pair) => pair.includes('='))
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );

function runOnce(tree: string, env: Record<string, string>): Run {
  const load = Number(readFileSync('/proc/loadavg', 'latin1').split(' ')[0]);
  const out = spawnSync(join(tree, 'node_modules', '.bin', 'tsx'), ['bench/follow.ts'], { cwd: tree, encoding: 'utf8', env: { ...process.env, ...env } });
  const row = ROW.exec(out.stdout ?? '');
  if (!row) throw new Error(`no 100-follower row from ${tree}:\n${out.stdout}\n${out.stderr}`);
  const [s50, s99, f50, f99, ratio] = row.slice(1).map(Number) as [number, number, number, number, number];
  const gc = CLIENT_GC.exec(out.stdout.slice(row.index));
  const clientGc = gc ? { sender: [Number(gc[1]), Number(gc[2])] as [number, number], followers: [Number(gc[3]), Number(gc[4])] as [number, number] } : undefined;
  const woke = WOKE.exec(out.stdout.slice(row.index));
  return { ratio, sender: [s50, s99], follower: [f50, f99], load, clientGc, woke: woke ? Number(woke[1]) : undefined };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function main(): void {
  if (!process.env.A) throw new Error('A=<path of the other tree> is needed');
  const sides = (['A', 'B', 'C'] as const)
    .map((name) => ({ name, tree: process.env[name] ?? (name === 'B' ? resolve(__dirname, '..') : undefined), env: sideEnv(process.env[`${name}_ENV`]), runs: [] as Run[] }))
    .filter((side): side is { name: 'A' | 'B' | 'C'; tree: string; env: Record<string, string>; runs: Run[] } => side.tree !== undefined)
    .map((side) => ({ ...side, tree: resolve(side.tree) }));
  const rounds = Number(process.env.ROUNDS ?? 10);
  for (let round = 0; round < rounds; round += 1) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const run = runOnce(side.tree, side.env);
      side.runs.push(run);
      console.log(
        `round ${round + 1} ${side.name}: ratio ${fmt(run.ratio)}, sender ${fmt(run.sender[0])} / ${fmt(run.sender[1])} ms, slowest follower ${fmt(run.follower[0])} / ${fmt(run.follower[1])} ms, load ${run.load}` +
          (run.woke !== undefined ? `; stamped at the wake ${fmt(run.woke)}` : '') +
          (run.clientGc
            ? `; clients' gc in the stage (count, longest ms): sender's ${run.clientGc.sender[0]}, ${fmt(run.clientGc.sender[1])}, followers' ${run.clientGc.followers[0]}, ${fmt(run.clientGc.followers[1])}`
            : ''),
      );
    }
  }
  for (const { name, tree, env, runs } of sides) {
    const ratios = runs.map((r) => r.ratio).sort((a, b) => a - b);
    const loads = runs.map((r) => r.load);
    console.log(
      `${name} (${tree}${
        Object.keys(env).length > 0
          ? ` ${Object.entries(env)
              .map(([k, v]) => `${k}=${v}`)
              .join(' ')}`
          : ''
      }): ratio median ${fmt(median(ratios))}, under 1.5 in ${ratios.filter((r) => r < 1.5).length} / ${runs.length} (${ratios.map((r) => fmt(r)).join(' ')}); ` +
        `sender p50 / p99 ${fmt(median(runs.map((r) => r.sender[0])))} / ${fmt(median(runs.map((r) => r.sender[1])))} ms, ` +
        `slowest follower ${fmt(median(runs.map((r) => r.follower[0])))} / ${fmt(median(runs.map((r) => r.follower[1])))} ms (medians); ` +
        `load ${fmt(Math.min(...loads), 1)}-${fmt(Math.max(...loads), 1)}` +
        (runs.some((r) => r.woke !== undefined)
          ? `; stamped at the wake: under 1.5 in ${runs.filter((r) => (r.woke ?? Infinity) < 1.5).length} / ${runs.length}, median ${fmt(median(runs.map((r) => r.woke ?? NaN)))}`
          : '') +
        `; runs whose followers' thread collected in the stage ${runs.filter((r) => (r.clientGc?.followers[0] ?? 0) > 0).length}, whose sender's did ${runs.filter((r) => (r.clientGc?.sender[0] ?? 0) > 0).length}`,
    );
  }
}

main();
