// How noisy is the auth row's figure, and would another way of reading the same turns be less so?
// `npx tsx bench/auth-method.ts FILE`, FILE written by bench/burst-turn-trace.ts with RA_TRACE_JSON and
// periods including two of the chat alone (e.g. RA_TRACE_KINDS='alone,404 one,login one,alone again,ws one').
// For each way of reading a set of rounds (bench/auth.ts's figure: the median of the rounds' longest turns;
// the same over windows of equal turn counts; per-round ratios; more rounds) it resamples rounds
// (with replacement, as many as a run of the bench has) and prints the spread of the ratio against the chat
// alone for each burst, and for `alone again` against `alone`: what the method reads when nothing differs.
import { readFileSync } from 'node:fs';
import { fmt } from './util';

interface Turn {
  kind: string;
  round: number;
  ms: number;
}

const file = process.argv[2];
if (!file) throw new Error('usage: npx tsx bench/auth-method.ts FILE (from bench/burst-turn-trace.ts, RA_TRACE_JSON)');
const trace = JSON.parse(readFileSync(file, 'utf8')) as { rounds: number; kinds: string[]; turns: Turn[] };
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
/** Every round's turns of `kind`, in order. */
const windows = (kind: string) => Array.from({ length: trace.rounds }, (_, r) => trace.turns.filter((t) => t.kind === kind && t.round === r).map((t) => t.ms));
const byKind = Object.fromEntries(trace.kinds.map((kind) => [kind, windows(kind)]));
/** The k-th longest of `xs` (1: the longest). */
const kth = (xs: number[], k: number) => [...xs].sort((a, b) => b - a)[Math.min(k, xs.length) - 1];

/** A way of reading rounds: the ratio of `kind` against `base` over the rounds `rounds` (indices, may repeat). */
type Method = (kind: number[][], base: number[][], rounds: number[]) => number;
const methods: Record<string, Method> = {
  // bench/auth.ts until s14: each round's longest turn, the median of the rounds', a ratio of medians.
  'longest, whole windows': (k, b, rs) => median(rs.map((r) => Math.max(...k[r]))) / median(rs.map((r) => Math.max(...b[r]))),
  // The same, each round's two windows cut to the fewer turns of the two (a window of more turns has a longer longest).
  'longest, equal turns': (k, b, rs) =>
    median(rs.map((r) => Math.max(...k[r].slice(0, Math.min(k[r].length, b[r].length))))) / median(rs.map((r) => Math.max(...b[r].slice(0, Math.min(k[r].length, b[r].length))))),
  // Each round's own ratio (equal turns), the median of those: pairs a burst with the alone period beside it.
  'longest, paired ratio': (k, b, rs) =>
    median(
      rs.map((r) => {
        const n = Math.min(k[r].length, b[r].length);
        return Math.max(...k[r].slice(0, n)) / Math.max(...b[r].slice(0, n));
      }),
    ),
  // The 3rd longest of each window (about p99.7 of ~1,000 turns), median of the rounds'.
  '3rd longest': (k, b, rs) => median(rs.map((r) => kth(k[r], 3))) / median(rs.map((r) => kth(b[r], 3))),
  // The 10th longest of each window (about p99 of ~1,000 turns), median of the rounds'.
  '10th longest': (k, b, rs) => median(rs.map((r) => kth(k[r], 10))) / median(rs.map((r) => kth(b[r], 10))),
};

const RESAMPLES = 2000;
let seed = 1;
/** A fixed pseudo-random sequence, so two readings of one file agree. */
const random = () => ((seed = (seed * 48271) % 2147483647) - 1) / 2147483646;
const pick = (n: number) => Array.from({ length: n }, () => Math.floor(random() * trace.rounds));

const alone = byKind.alone;
const compared = trace.kinds.filter((kind) => kind !== 'alone');
console.log(
  `${file}: ${trace.rounds} rounds; turns a window (median): ${compared.map((kind) => `${kind} ${median(byKind[kind].map((w) => w.length))}`).join(', ')}, alone ${median(alone.map((w) => w.length))}`,
);
console.log(`rounds' longest, ms: ${trace.kinds.map((kind) => `\n  ${kind}: ${byKind[kind].map((w) => fmt(Math.max(...w), 0)).join(' ')}`).join('')}`);
for (const size of [7, 21]) {
  console.log(`\n${size} rounds a run, ${RESAMPLES} resampled runs: ratio against the chat alone, median [10th-90th percentile] (share of runs over 2x)`);
  for (const [name, method] of Object.entries(methods)) {
    const parts = compared.map((kind) => {
      seed = 1;
      const ratios = Array.from({ length: RESAMPLES }, () => method(byKind[kind], alone, pick(size))).sort((a, b) => a - b);
      const over = ratios.filter((x) => x >= 2).length / ratios.length;
      return `${kind} ${fmt(median(ratios))} [${fmt(ratios[Math.floor(0.1 * RESAMPLES)])}-${fmt(ratios[Math.floor(0.9 * RESAMPLES)])}] (${fmt(100 * over, 0)}%)`;
    });
    console.log(`  ${name}: ${parts.join('; ')}`);
  }
}
