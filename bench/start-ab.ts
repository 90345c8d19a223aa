// The headless start's rows (bench/start.ts: listening and ready, wall clock and the main thread's CPU)
// for two builds, taking turns start by start, so that the machine's load (other sessions on the same
// 2 cores and disk) falls on both alike; a bare `node -e 0` between each pair. Prints each build's
// medians, the share of pairs where B was below A, and the load average before and after.
// `A=<a dist/cli.js> B=<another> [ROUNDS=15] npx tsx bench/start-ab.ts`.
// With BENCH_START=chat, the chat row instead (bench/start.ts: a chat one second after start against the
// second one, BENCH_CHAT_PROVIDER choosing the provider), one run of each build a round, in turns.
import { loadavg } from 'node:os';
import { bareNode, chatProvider, firstChats, median, serve, withDataDir, type FirstChats, type Timing } from './start';
import { fmt } from './util';

const ROUNDS = Number(process.env.ROUNDS ?? 15);

async function start(cli: string): Promise<{ listening: Timing; ready: Timing }> {
  return withDataDir(async (dir) => {
    const serving = await serve(dir, cli);
    await serving.stop();
    return { listening: serving.listening, ready: serving.ready };
  });
}

const loadNow = () =>
  loadavg()
    .map((l) => fmt(l, 1))
    .join(' ');

/** The chat row for both builds, a run of each a round (which goes first alternates). */
async function chats(builds: { A: string; B: string }): Promise<void> {
  const load = loadNow();
  const provider = await chatProvider();
  const runs = { A: [] as FirstChats[], B: [] as FirstChats[] };
  try {
    for (let i = 0; i < ROUNDS; i += 1) {
      for (const side of i % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) runs[side].push(await firstChats(provider, builds[side]));
    }
  } finally {
    await provider.close();
  }
  console.log(`${ROUNDS} runs each (${process.env.BENCH_CHAT_PROVIDER ?? 'openai'}), load average ${load} -> ${loadNow()}`);
  for (const key of ['ms', 'cpuMs'] as const) {
    const what = key === 'ms' ? 'wall clock' : 'main thread CPU';
    const ratios = (side: 'A' | 'B') => runs[side].map((run) => run.first[key] / run.second[key]);
    const firsts = (side: 'A' | 'B') => runs[side].map((run) => run.first[key]);
    const lower = firsts('B').filter((v, i) => v < firsts('A')[i]).length;
    for (const side of ['A', 'B'] as const) {
      console.log(
        `${side}: chat 1 s after start / the second, ${what}: ${fmt(median(ratios(side)), 2)}x ` +
          `(first ${fmt(median(firsts(side)), 1)} ms, second ${fmt(median(runs[side].map((run) => run.second[key])), 1)} ms)`,
      );
    }
    console.log(`  first chat's ${what}: B lower in ${lower} of ${ROUNDS} pairs`);
  }
  for (const side of ['A', 'B'] as const) console.log(`${side}: the warm-up was over at the chat in ${runs[side].filter((run) => run.warmedUp).length} of ${ROUNDS} runs`);
}

async function main(): Promise<void> {
  const builds = { A: process.env.A, B: process.env.B };
  if (!builds.A || !builds.B) throw new Error('A=<dist/cli.js> B=<dist/cli.js> npx tsx bench/start-ab.ts');
  if (process.env.BENCH_START === 'chat') return chats({ A: builds.A, B: builds.B });
  const load = loadNow();
  const bare: Timing[] = [];
  const runs = { A: [] as { listening: Timing; ready: Timing }[], B: [] as { listening: Timing; ready: Timing }[] };
  for (let i = 0; i < ROUNDS; i += 1) {
    bare.push(await bareNode());
    // Which goes first alternates too.
    for (const side of i % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) runs[side].push(await start(builds[side]!));
  }
  const bareMs = median(bare.map((t) => t.ms));
  const bareCpu = median(bare.map((t) => t.cpuMs));
  console.log(`${ROUNDS} starts each, load average ${load} -> ${loadNow()}; bare node -e 0: ${fmt(bareMs, 0)} ms wall, ${fmt(bareCpu, 0)} ms CPU`);
  for (const point of ['listening', 'ready'] as const)
    for (const key of ['ms', 'cpuMs'] as const) {
      const a = runs.A.map((r) => r[point][key]);
      const b = runs.B.map((r) => r[point][key]);
      const base = key === 'ms' ? bareMs : bareCpu;
      const lower = b.filter((v, i) => v < a[i]).length;
      console.log(
        `${point}, ${key === 'ms' ? 'wall clock' : 'main thread CPU'}: A ${fmt(median(a), 0)} ms (${fmt(median(a) / base, 2)}x), ` +
          `B ${fmt(median(b), 0)} ms (${fmt(median(b) / base, 2)}x); B lower in ${lower} of ${ROUNDS} pairs`,
      );
    }
  // The gap the row is made of beyond listening.
  for (const key of ['ms', 'cpuMs'] as const) {
    const gap = (side: 'A' | 'B') => median(runs[side].map((r) => r.ready[key] - r.listening[key]));
    console.log(`listening -> ready, ${key === 'ms' ? 'wall clock' : 'main thread CPU'}: A ${fmt(gap('A'), 1)} ms, B ${fmt(gap('B'), 1)} ms`);
  }
}

void main();
