// The follow bench's row (issue 25: the slowest of 100 followers' p99 / the sender's) for several trees
// of this project taking turns, one whole run of each tree's own bench/follow.ts (its service and its
// clients) at a time, the order reversed every round, so that the machine's load falls on all alike.
// `A=/path/to/other/tree npx tsx bench/follow-ab.ts` (B: this tree unless given; C: a third, e.g. one
// tree's service with another's bench; ROUNDS, default 10). Printed: each run's ratio as it ends, then
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
}

const ROW = /100 follower\(s\): sender p50 ([\d.]+) ms p99 ([\d.]+) ms; slowest follower p50 ([\d.]+) ms p99 ([\d.]+) ms; p99 ratio ([\d.]+)/;

function runOnce(tree: string): Run {
  const load = Number(readFileSync('/proc/loadavg', 'latin1').split(' ')[0]);
  const out = spawnSync(join(tree, 'node_modules', '.bin', 'tsx'), ['bench/follow.ts'], { cwd: tree, encoding: 'utf8' });
  const row = ROW.exec(out.stdout ?? '');
  if (!row) throw new Error(`no 100-follower row from ${tree}:\n${out.stdout}\n${out.stderr}`);
  const [s50, s99, f50, f99, ratio] = row.slice(1).map(Number) as [number, number, number, number, number];
  return { ratio, sender: [s50, s99], follower: [f50, f99], load };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function main(): void {
  if (!process.env.A) throw new Error('A=<path of the other tree> is needed');
  const sides = (['A', 'B', 'C'] as const)
    .map((name) => ({ name, tree: process.env[name] ?? (name === 'B' ? resolve(__dirname, '..') : undefined), runs: [] as Run[] }))
    .filter((side): side is { name: 'A' | 'B' | 'C'; tree: string; runs: Run[] } => side.tree !== undefined)
    .map((side) => ({ ...side, tree: resolve(side.tree) }));
  const rounds = Number(process.env.ROUNDS ?? 10);
  for (let round = 0; round < rounds; round += 1) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const run = runOnce(side.tree);
      side.runs.push(run);
      console.log(
        `round ${round + 1} ${side.name}: ratio ${fmt(run.ratio)}, sender ${fmt(run.sender[0])} / ${fmt(run.sender[1])} ms, slowest follower ${fmt(run.follower[0])} / ${fmt(run.follower[1])} ms, load ${run.load}`,
      );
    }
  }
  for (const { name, tree, runs } of sides) {
    const ratios = runs.map((r) => r.ratio).sort((a, b) => a - b);
    const loads = runs.map((r) => r.load);
    console.log(
      `${name} (${tree}): ratio median ${fmt(median(ratios))}, under 1.5 in ${ratios.filter((r) => r < 1.5).length} / ${runs.length} (${ratios.map((r) => fmt(r)).join(' ')}); ` +
        `sender p50 / p99 ${fmt(median(runs.map((r) => r.sender[0])))} / ${fmt(median(runs.map((r) => r.sender[1])))} ms, ` +
        `slowest follower ${fmt(median(runs.map((r) => r.follower[0])))} / ${fmt(median(runs.map((r) => r.follower[1])))} ms (medians); ` +
        `load ${fmt(Math.min(...loads), 1)}-${fmt(Math.max(...loads), 1)}`,
    );
  }
}

main();
