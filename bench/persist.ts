// Persistence benchmark: the cost of making one chat turn durable must not grow with the database
// (no whole-file export on the write path), and the event loop must not stall, compaction included.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { openStore } from '../src/store/index';
import type { NewMessage, Store } from '../src/store/index';

export interface PersistBenchOptions {
  smallMessages?: number;
  largeMessages?: number;
  /** Measured turns per store (interleaved small/large so drift hits both alike). */
  turns?: number;
  log?: (line: string) => void;
}

export interface PersistBenchResult {
  smallMessages: number;
  largeMessages: number;
  turns: number;
  /** Mean cost of one durable turn (user + assistant message, one transaction), microseconds. */
  turnCostSmallUs: number;
  turnCostLargeUs: number;
  turnCostSmallP50Us: number;
  turnCostLargeP50Us: number;
  /** turnCostLargeUs / turnCostSmallUs (means). */
  ratio: number;
  /** Same with medians, less sensitive to a slow fsync. */
  ratioP50: number;
  /** Longest event-loop stall over every measured phase, compaction included (ms). */
  maxStallMs: number;
  maxStallSteadyMs: number;
  maxStallDuringCompactionMs: number;
  /** A forced compaction of the large store while turns kept being written. */
  compactionMs: number;
  turnsDuringCompaction: number;
  turnCostDuringCompactionUs: number;
  largeSnapshotBytes: number;
  seedMs: number;
  totalMs: number;
}

const HOUR = 3_600_000;
const T0 = Date.UTC(2024, 0, 1);

function text(n: number, seed: number): string {
  const words = ['the', 'service', 'journal', 'durable', 'assistant', 'message', 'phone', 'editor', 'tool', 'snapshot'];
  let out = '';
  let i = seed;
  while (out.length < n) {
    out += `${words[i % words.length]} `;
    i = (i * 7 + 3) % 1009;
  }
  return out.slice(0, n);
}

function turn(conversationId: string, i: number, at: number): NewMessage[] {
  return [
    { id: `${conversationId}-u${i}`, conversation_id: conversationId, role: 'user', content: text(100 + (i % 200), i), timestamp: new Date(at).toISOString(), user_id: 'bench' },
    { id: `${conversationId}-a${i}`, conversation_id: conversationId, role: 'assistant', content: text(300 + ((i * 13) % 1200), i + 1), timestamp: new Date(at + 1).toISOString() },
  ];
}

/** Fills a store with `messages` messages over conversations of 100, in big transactions. */
async function seed(dir: string, messages: number): Promise<void> {
  const store = await openStore(dir, { segmentBytes: 1 << 30 }); // one segment: a single compaction at the end
  const perConversation = 100;
  const batch: NewMessage[] = [];
  for (let c = 0; c * perConversation < messages; c++) {
    const id = `seed-${c}`;
    await store.conversations.create({ id, title: `conversation ${c}`, source: 'ws', created_at: new Date(T0 + c * HOUR).toISOString() });
    for (let i = 0; i < perConversation / 2 && c * perConversation + 2 * i < messages; i++) {
      batch.push(...turn(id, i, T0 + c * HOUR + i * 1000));
      if (batch.length >= 5000) await store.messages.appendMany(batch.splice(0));
    }
  }
  if (batch.length > 0) await store.messages.appendMany(batch.splice(0));
  await store.db.compact();
  await store.close();
}

async function openBench(dir: string): Promise<Store> {
  const store = await openStore(dir);
  await store.conversations.create({ id: 'bench', title: 'bench', source: 'ws', created_at: new Date(T0 + 10_000 * HOUR).toISOString() });
  return store;
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.floor(s.length / 2)];
}

export async function benchPersist(options: PersistBenchOptions = {}): Promise<PersistBenchResult> {
  const smallMessages = options.smallMessages ?? 1_000;
  const largeMessages = options.largeMessages ?? 100_000;
  const turns = options.turns ?? 300;
  const log = options.log ?? (() => {});
  const started = Date.now();
  const root = await mkdtemp(path.join(tmpdir(), 'bench-persist-'));
  const stores: Store[] = [];
  try {
    const smallDir = path.join(root, 'small');
    const largeDir = path.join(root, 'large');
    const seedStart = Date.now();
    await seed(smallDir, smallMessages);
    await seed(largeDir, largeMessages);
    const seedMs = Date.now() - seedStart;
    log(`seeded ${smallMessages} + ${largeMessages} messages in ${seedMs} ms`);

    const small = await openBench(smallDir);
    stores.push(small);
    const large = await openBench(largeDir);
    stores.push(large);
    let n = 0;
    const persistTurn = async (store: Store): Promise<number> => {
      const i = n++;
      const messages = turn('bench', i, T0 + 20_000 * HOUR + i * 1000);
      const t = process.hrtime.bigint();
      await store.messages.appendMany(messages);
      return Number(process.hrtime.bigint() - t) / 1000;
    };

    for (let i = 0; i < 30; i++) {
      await persistTurn(small);
      await persistTurn(large);
    }

    const steady = monitorEventLoopDelay({ resolution: 1 });
    steady.enable();
    const smallUs: number[] = [];
    const largeUs: number[] = [];
    for (let i = 0; i < turns; i++) {
      // Alternate which goes first so neither store always follows the other's fsync.
      if (i % 2 === 0) {
        smallUs.push(await persistTurn(small));
        largeUs.push(await persistTurn(large));
      } else {
        largeUs.push(await persistTurn(large));
        smallUs.push(await persistTurn(small));
      }
    }
    steady.disable();
    const maxStallSteadyMs = steady.max / 1e6;

    const during = monitorEventLoopDelay({ resolution: 1 });
    during.enable();
    const compactStart = process.hrtime.bigint();
    let compacting = true;
    const compaction = large.db.compact().finally(() => {
      compacting = false;
    });
    const compactionUs: number[] = [];
    while (compacting) compactionUs.push(await persistTurn(large));
    await compaction;
    const compactionMs = Number(process.hrtime.bigint() - compactStart) / 1e6;
    during.disable();
    const maxStallDuringCompactionMs = during.max / 1e6;
    const stats = large.db.stats();
    if (stats.compactions < 1) throw new Error('the forced compaction did not run');
    const largeSnapshotBytes = (await stat(path.join(largeDir, 'service.db'))).size;

    const result: PersistBenchResult = {
      smallMessages,
      largeMessages,
      turns,
      turnCostSmallUs: Math.round(mean(smallUs)),
      turnCostLargeUs: Math.round(mean(largeUs)),
      turnCostSmallP50Us: Math.round(median(smallUs)),
      turnCostLargeP50Us: Math.round(median(largeUs)),
      ratio: Number((mean(largeUs) / mean(smallUs)).toFixed(3)),
      ratioP50: Number((median(largeUs) / median(smallUs)).toFixed(3)),
      maxStallMs: Number(Math.max(maxStallSteadyMs, maxStallDuringCompactionMs).toFixed(2)),
      maxStallSteadyMs: Number(maxStallSteadyMs.toFixed(2)),
      maxStallDuringCompactionMs: Number(maxStallDuringCompactionMs.toFixed(2)),
      compactionMs: Math.round(compactionMs),
      turnsDuringCompaction: compactionUs.length,
      turnCostDuringCompactionUs: Math.round(mean(compactionUs)),
      largeSnapshotBytes,
      seedMs,
      totalMs: 0,
    };
    result.totalMs = Date.now() - started;
    return result;
  } finally {
    for (const s of stores) await s.close().catch(() => {});
    await rm(root, { recursive: true, force: true });
  }
}

/** Runs the benchmark and prints its figures (what `npm run bench` shows). */
export async function runPersistBench(): Promise<PersistBenchResult> {
  const r = await benchPersist();
  const ok = (cond: boolean) => (cond ? 'ok' : 'OVER GOAL');
  console.log(`turn cost, ${r.smallMessages} messages:   mean ${r.turnCostSmallUs} us, p50 ${r.turnCostSmallP50Us} us`);
  console.log(`turn cost, ${r.largeMessages} messages: mean ${r.turnCostLargeUs} us, p50 ${r.turnCostLargeP50Us} us`);
  console.log(`ratio large/small: ${r.ratio} (mean), ${r.ratioP50} (p50)  [goal < 1.5: ${ok(r.ratio < 1.5)}]`);
  console.log(`max event-loop stall: ${r.maxStallMs} ms (steady ${r.maxStallSteadyMs} ms, during compaction ${r.maxStallDuringCompactionMs} ms)  [goal <= 20 ms: ${ok(r.maxStallMs <= 20)}]`);
  console.log(
    `forced compaction of the large store (${(r.largeSnapshotBytes / 1048576).toFixed(1)} MiB snapshot): ${r.compactionMs} ms, ${r.turnsDuringCompaction} turns written meanwhile at ${r.turnCostDuringCompactionUs} us each`,
  );
  return r;
}

if (require.main === module) {
  runPersistBench().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
