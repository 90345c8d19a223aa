// The agent row's cold phase (issue 25; docs/design.md "The cold phase", s18): a fresh service's turns of
// one conversation with bench/agent.ts's slices (150 ms of turns, a 300 ms pause, 40 ms of `meta.set`), each
// turn's wall time, main-thread CPU (/proc schedstat) and process CPU (all threads: V8's TurboFan and GC
// helpers, libuv's pool, the workers), printed per BUCKET turns (default 500): how far the turn's code is
// from its warm self turn by turn. TURNS=n: n turns a slice instead of 150 ms (the same turns in every run,
// to compare traces); SLICES (default 60); MARK=1: a line `@@T n` every 100 turns, to read beside
// `node --trace-opt --trace-deopt --import tsx bench/cold-phase.ts > trace.txt`, which
// `npx tsx bench/cold-phase.ts trace.txt` then sums per ROUND turns (default 2,600, about one of the row's
// measures) after the bench's 260 turns of warm-up: TurboFan's compiles (how many were of a function
// compiled before), their time (`took`, wall: inflated at load) and the deopts.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Service } from '../src/service';
import { instantProvider } from './agent';
import { mainThreadCpuMs } from './util';

const BUCKET = Number(process.env.BUCKET ?? 500);
/** The row's measured turns begin after about this many (bench/agent.ts's measure of 2 slices). */
const WARMUP = 260;

async function run(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-cold-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => instantProvider(0) });
  const wall: number[] = [];
  const main: number[] = [];
  const all: number[] = [];
  const perSlice = Number(process.env.TURNS ?? 0);
  let conversationId: string | undefined;
  try {
    await service.agent.chat({ message: 'baseline', source: { kind: 'lan' } });
    for (let slice = 0; slice < Number(process.env.SLICES ?? 60); slice += 1) {
      const end = performance.now() + 150;
      const first = wall.length;
      while (perSlice > 0 ? wall.length - first < perSlice : performance.now() < end) {
        const cpu = mainThreadCpuMs();
        const usage = process.cpuUsage();
        const t0 = performance.now();
        const out = await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } });
        wall.push(performance.now() - t0);
        main.push(mainThreadCpuMs() - cpu);
        const used = process.cpuUsage(usage);
        all.push((used.user + used.system) / 1000);
        conversationId = out.conversation_id;
        if (process.env.MARK && wall.length % 100 === 0) process.stdout.write(`@@T ${wall.length}\n`);
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      const writes = performance.now() + 40;
      while (performance.now() < writes) await service.store.meta.set('bench.baseline', String(slice));
    }
  } finally {
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (let from = 0; from < wall.length; from += BUCKET) {
    const of = (xs: number[]) => xs.slice(from, from + BUCKET);
    const sorted = of(wall).sort((a, b) => a - b);
    console.log(
      `turns ${from}-${from + sorted.length - 1}: p50 ${sorted[Math.floor(sorted.length / 2)].toFixed(3)} mean ${mean(sorted).toFixed(3)} ms; ` +
        `CPU a turn: main thread ${mean(of(main)).toFixed(3)}, process ${mean(of(all)).toFixed(3)} ms`,
    );
  }
}

/** Sums a `--trace-opt --trace-deopt` output of a MARK=1 run per ROUND turns after the warm-up. */
function summarize(file: string): void {
  const round = Number(process.env.ROUND ?? 2600);
  const rounds = new Map<number, { compiles: number; again: number; ms: number; deopts: number }>();
  const compiled = new Set<string>();
  let turn = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const mark = /^@@T (\d+)/.exec(line);
    if (mark) {
      turn = Number(mark[1]);
      continue;
    }
    const key = turn < WARMUP ? -1 : Math.floor((turn - WARMUP) / round);
    const r = rounds.get(key) ?? { compiles: 0, again: 0, ms: 0, deopts: 0 };
    rounds.set(key, r);
    const took = /completed compiling .*\(sfi = (\w+)\).* took ([\d.]+), ([\d.]+), ([\d.]+) ms/.exec(line);
    if (took) {
      r.compiles += 1;
      r.ms += Number(took[2]) + Number(took[3]) + Number(took[4]);
      if (compiled.has(took[1])) r.again += 1;
      compiled.add(took[1]);
    } else if (line.startsWith('[bailout')) r.deopts += 1;
  }
  for (const [key, r] of [...rounds].sort((a, b) => a[0] - b[0])) {
    const what = key < 0 ? `start and turns 0-${WARMUP - 1}` : `turns ${WARMUP + key * round}-${WARMUP + (key + 1) * round - 1}`;
    console.log(`${what}: ${r.compiles} compiles (${r.again} of a function compiled before), ${r.ms.toFixed(0)} ms; ${r.deopts} deopts`);
  }
}

if (require.main === module) {
  const file = process.argv[2];
  if (file) summarize(file);
  else void run();
}
