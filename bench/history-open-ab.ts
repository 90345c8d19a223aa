// Interleaved A/B of a history's open (issue 25: memory at open per conversation): two copies of one
// generated history (bench/history.ts; e.g. HISTORY_BENCH_PER_CONVERSATION=4, 1850 MB: 100,000
// conversations), each opened by its own checkout's code in a fresh child, alternately, ROUNDS times:
//   tsx bench/history-open-ab.ts <dir A> <checkout A> <dir B> <checkout B> [rounds, default 5]
// A checkout opening a copy first migrates it: open each copy once with its code before measuring.
// Prints each open and the medians of resident memory added, sql.js' database and the open's time.
import { openInChild, type OpenFigures } from './history';
import { fmt } from './util';
import { loadavg } from 'node:os';

const [dirA, rootA, dirB, rootB, roundsArg] = process.argv.slice(2);
if (!dirA || !rootA || !dirB || !rootB) throw new Error('usage: tsx bench/history-open-ab.ts <dir A> <checkout A> <dir B> <checkout B> [rounds]');
const rounds = Number(roundsArg ?? 5);
const sides = { A: { dir: dirA, root: rootA, opens: [] as OpenFigures[] }, B: { dir: dirB, root: rootB, opens: [] as OpenFigures[] } };
for (let round = 0; round < rounds; round++) {
  // Alternating which goes first, so neither always meets the other's aftermath.
  for (const name of round % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) {
    const side = sides[name];
    const open = openInChild(side.dir, side.root);
    side.opens.push(open);
    console.log(`round ${round + 1} ${name}: RSS added ${fmt(open.rssDelta / 1e6, 1)} MB, sql.js ${fmt(open.sqlJs / 1e6, 1)} MB, open ${fmt(open.openMs, 0)} ms, load ${loadavg()[0].toFixed(1)}`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, side] of Object.entries(sides)) {
  console.log(
    `${name} (${side.root}): median RSS added ${fmt(median(side.opens.map((o) => o.rssDelta)) / 1e6, 1)} MB, sql.js ${fmt(median(side.opens.map((o) => o.sqlJs)) / 1e6, 1)} MB, open ${fmt(median(side.opens.map((o) => o.openMs)), 0)} ms`,
  );
}
