// The agent bench's row (0 tools, 1 conversation, an instant provider; bench/agent.ts) for two trees of
// this project in ONE process, taking turns in short blocks, so that the machine's load (other sessions'
// suites on the same 2 cores and disk) falls on both alike: `A` is another worktree (e.g. main's), `B`
// this one. Per block: each tree's mean turn and its own durable write (`meta.set`, bench/agent.ts's
// baseline) and the main thread's CPU a turn; printed: the median over blocks of each, of their ratio,
// journal fdatasyncs a turn, and each side's p50, p99 and mean over all its turns (the tail).
// `A=/path/to/other/worktree npx tsx bench/agent-ab.ts` (BLOCKS, TURNS a block, NETWORK_MS: a provider
// answering after a timer instead of at once; A_DIR / B_DIR: where each side's data directory is made,
// default the temp dir: e.g. `A=. B_DIR=/dev/shm` runs one tree on the disk against tmpfs, what the
// disk's fdatasync costs the turn and its tail under the same load).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { CompletionRequest, CompletionResult, Provider } from '../src/agent/providers/types';
import type { Service } from '../src/service';
import { instantProvider } from './agent';
import { fmt, mainThreadCpuMs, percentile } from './util';

interface Side {
  name: string;
  dir: string;
  service: Service;
  conversationId?: string;
  turns: number[];
  writes: number[];
  ratios: number[];
  /** The main thread's CPU a turn (ms), each block. */
  cpu: number[];
  flushes: number;
  turnsDone: number;
  /** Every measured turn's latency (ms): the tail (p99) of each side, pooled over its blocks. */
  latencies: number[];
  /** With STALL=1: the event loop's longest delay in each block's turns (ms, 1 ms timer). */
  stalls: number[];
}

const networkMs = Number(process.env.NETWORK_MS ?? 0);

function provider(): Provider {
  const instant = instantProvider(0);
  if (networkMs === 0) return instant;
  return {
    name: 'timed',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      await new Promise((done) => setTimeout(done, networkMs));
      return instant.complete(request);
    },
  };
}

async function open(name: string, root: string): Promise<Side> {
  const { Service: Opened } = require(join(root, 'src', 'service')) as { Service: typeof Service };
  const dir = await mkdtemp(join(process.env[`${name}_DIR`] ?? tmpdir(), `ra-bench-ab-${name}-`));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Opened.open({ dataDir: dir, provider: () => provider() });
  return { name, dir, service, turns: [], writes: [], ratios: [], cpu: [], flushes: 0, turnsDone: 0, latencies: [], stalls: [] };
}

async function block(side: Side, turns: number): Promise<void> {
  const { service } = side;
  const flushes = service.store.db.stats().flushes;
  const cpu = mainThreadCpuMs();
  const loop = process.env.STALL ? monitorEventLoopDelay({ resolution: 1 }) : null;
  loop?.enable();
  const t0 = performance.now();
  for (let i = 0; i < turns; i++) {
    const at = performance.now();
    const out = await service.agent.chat({ message: 'bench turn', conversationId: side.conversationId, source: { kind: 'lan' } });
    side.latencies.push(performance.now() - at);
    side.conversationId = out.conversation_id;
  }
  const turn = (performance.now() - t0) / turns;
  if (loop) {
    loop.disable();
    side.stalls.push(loop.max / 1e6);
  }
  side.cpu.push((mainThreadCpuMs() - cpu) / turns);
  side.flushes += service.store.db.stats().flushes - flushes;
  side.turnsDone += turns;
  const w0 = performance.now();
  for (let i = 0; i < 20; i++) await service.store.meta.set('bench.baseline', String(i));
  const write = (performance.now() - w0) / 20;
  side.turns.push(turn);
  side.writes.push(write);
  side.ratios.push((turn - networkMs) / write);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const other = process.env.A;
  if (!other) throw new Error('A=<path of the other worktree> is needed');
  const blocks = Number(process.env.BLOCKS ?? 20);
  const turns = Number(process.env.TURNS ?? 50);
  const sides = [await open('A', resolve(other)), await open('B', resolve(__dirname, '..'))];
  try {
    for (const side of sides) await block(side, 100);
    for (const side of sides) Object.assign(side, { turns: [], writes: [], ratios: [], cpu: [], flushes: 0, turnsDone: 0, latencies: [], stalls: [] });
    for (let i = 0; i < blocks; i++) for (const side of i % 2 === 0 ? sides : [...sides].reverse()) await block(side, turns);
    const [a, b] = sides;
    const paired = a.turns.map((turn, i) => b.turns[i] / turn);
    console.log(`B / A main thread CPU a turn: ${fmt(median(a.cpu.map((cpu, i) => b.cpu[i] / cpu)), 2)} (median of the blocks' ratios)`);
    const common = a.turns.map((_, i) => (a.writes[i] + b.writes[i]) / 2);
    console.log(
      `B / A turn: ${fmt(median(paired), 2)} (median of the blocks' ratios); against the two sides' mean write of each block: ` +
        `A ${fmt(median(a.turns.map((t, i) => (t - networkMs) / common[i])), 1)}x, B ${fmt(median(b.turns.map((t, i) => (t - networkMs) / common[i])), 1)}x`,
    );
    for (const side of sides) {
      console.log(
        `${side.name}: turn ${fmt(median(side.turns))} ms, durable write ${fmt(median(side.writes))} ms, ` +
          `(turn - provider) / write ${fmt(median(side.ratios), 1)}x (median of ${blocks} blocks of ${turns}); ` +
          `journal fdatasyncs a turn ${fmt(side.flushes / side.turnsDone, 2)}; main thread CPU a turn ${fmt(median(side.cpu), 3)} ms`,
      );
      if (side.stalls.length > 0) {
        console.log(`${side.name}: the loop's longest delay a block: median ${fmt(median(side.stalls))} ms, max ${fmt(Math.max(...side.stalls))} ms`);
      }
      const sorted = [...side.latencies].sort((x, y) => x - y);
      const mean = sorted.reduce((n, x) => n + x, 0) / sorted.length;
      console.log(
        `${side.name}: every turn (${sorted.length}): p50 ${fmt(percentile(sorted, 50))} ms, p99 ${fmt(percentile(sorted, 99))} ms, mean ${fmt(mean)} ms, mean - p50 ${fmt(mean - percentile(sorted, 50))} ms`,
      );
    }
  } finally {
    for (const side of sides) {
      await side.service.stop();
      await rm(side.dir, { recursive: true, force: true });
    }
  }
}

void main();
