// What the process's threads ran during the slow turns, from a CPU profile lined up with the turns
// (docs/design.md, "The row's tail", s17). Run the tail trace under perf on CLOCK_MONOTONIC, then this:
//   DUMP=/tmp/turns.json SLICED=1 TURNS=3000 perf record -k CLOCK_MONOTONIC -F 1999 -g -o /tmp/perf.data -- \
//     node --perf-basic-prof --import tsx bench/turn-tail-trace.ts
//   perf script -i /tmp/perf.data -F pid,tid,time,ip,sym > /tmp/perf.txt
//   npx tsx bench/turn-tail-perf.ts /tmp/perf.txt /tmp/turns.json
// Each sample is put in a kind by its stack (TurboFan compiling JS, WebAssembly compiling, GC's phases,
// the rest) and a thread (the main thread, or another: V8's helpers, libuv's pool, the workers). Printed:
// the CPU sampled a turn of each, over all turns, the slow ones (at or above the p99) and those over 2x
// the p50; then the turns that had TurboFan compiling on another thread within their first p50 ms (a
// window as long for every turn) against the rest: how often each reached the p99 and what they add to
// the mean.
import { readFileSync } from 'node:fs';
import { fmt, percentile } from './util';

interface Sample {
  at: number;
  main: boolean;
  kind: string;
}

function kindOf(stack: string): string {
  if (/GenerateCodeForWasmFunction|WasmLoop|wasm::.*Compil/.test(stack)) return 'wasm compile';
  if (/PipelineCompilationJob|OptimizingCompileDispatcher/.test(stack)) return 'turbofan (JS)';
  if (stack.includes('ConcurrentMarking')) return 'concurrent marking';
  if (stack.includes('Scaveng')) return 'scavenge';
  if (stack.includes('Sweep')) return 'sweep';
  return 'other';
}

function samplesOf(file: string): Sample[] {
  const all: Array<Sample & { pid: string }> = [];
  for (const block of readFileSync(file, 'utf8').split('\n\n')) {
    const lines = block.trim().split('\n');
    const head = lines[0]?.trim().split(/\s+/) ?? [];
    const [pid, tid] = (head[0] ?? '').split('/');
    const time = head.find((field) => field.endsWith(':'));
    if (!pid || !tid || !time) continue;
    all.push({ pid, at: Number(time.slice(0, -1)) * 1000, main: pid === tid, kind: kindOf(lines.slice(1).join(' ')) });
  }
  // The profiled process is the one with the most samples (perf also sees its launcher).
  const counts = new Map<string, number>();
  for (const s of all) counts.set(s.pid, (counts.get(s.pid) ?? 0) + 1);
  const pid = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
  return all.filter((s) => s.pid === pid).sort((a, b) => a.at - b.at);
}

function main(): void {
  const [perfFile, turnsFile] = process.argv.slice(2);
  if (!perfFile || !turnsFile) throw new Error('usage: turn-tail-perf.ts <perf script output> <DUMP file>');
  const samples = samplesOf(perfFile);
  const hz = Number(process.env.HZ ?? 1999);
  const turns = (JSON.parse(readFileSync(turnsFile, 'utf8')) as Array<[number, number]>).map(([at, ms]) => ({ at, ms }));
  const times = samples.map((s) => s.at);
  const firstAtOrAfter = (t: number) => {
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (times[mid] < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const within = (from: number, ms: number) => samples.slice(firstAtOrAfter(from), firstAtOrAfter(from + ms));
  const sorted = turns.map((t) => t.ms).sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  const perTurn = (of: typeof turns) => {
    const ms = new Map<string, number>();
    for (const t of of) {
      for (const s of within(t.at, t.ms)) {
        const key = `${s.main ? 'main' : 'other threads'}: ${s.kind}`;
        ms.set(key, (ms.get(key) ?? 0) + 1000 / hz);
      }
    }
    return [...ms]
      .sort((a, b) => b[1] - a[1])
      .filter(([, total]) => total / of.length >= 0.005)
      .map(([key, total]) => `${key} ${fmt(total / of.length, 3)}`)
      .join(', ');
  };
  console.log(`${turns.length} turns, ${samples.length} samples at ${hz} Hz; turn p50 ${fmt(p50)} p99 ${fmt(p99)} ms`);
  console.log(`CPU sampled a turn (ms), all turns: ${perTurn(turns)}`);
  console.log(`  at or above the p99: ${perTurn(turns.filter((t) => t.ms >= p99))}`);
  console.log(`  over 2x the p50:     ${perTurn(turns.filter((t) => t.ms > 2 * p50))}`);
  const compiling = (t: { at: number }) => within(t.at, p50).some((s) => !s.main && s.kind === 'turbofan (JS)');
  const met = turns.filter(compiling);
  const rest = turns.filter((t) => !compiling(t));
  const mean = (of: typeof turns) => of.reduce((n, t) => n + t.ms, 0) / of.length;
  const slowShare = (of: typeof turns) => `${fmt((of.filter((t) => t.ms >= p99).length / of.length) * 100, 1)}%`;
  console.log(
    `turns with TurboFan compiling on another thread in their first ${fmt(p50)} ms: ${met.length}, ${slowShare(met)} at or above the p99, mean ${fmt(mean(met))} ms; ` +
      `the rest ${rest.length}, ${slowShare(rest)}, mean ${fmt(mean(rest))} ms; they add ${fmt(((mean(met) - mean(rest)) * met.length) / turns.length, 3)} ms to the mean (all ${fmt(mean(turns))}, p50 ${fmt(p50)})`,
  );
}

main();
