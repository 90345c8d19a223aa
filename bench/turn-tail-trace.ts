// What the agent bench's rare slow turns are made of (issue 25, the agent row's mean): `npx tsx
// bench/turn-tail-trace.ts`. Turns of one conversation (0 tools, the instant provider of bench/agent.ts)
// in blocks, and between blocks the disk's own floor in the same minutes: a bare append + fdatasync of a
// file in the same directory (what the journal does, without the store), and the same record written over
// a zero-filled file instead (no size change: the fdatasync needs no ext4 journal commit; what
// preallocated segments would give, docs/design.md "The turn's tail"). Each turn is stamped:
// - the main thread's scheduler accounting (/proc/self/task/<pid>/schedstat): running, waiting for a
//   core, and the rest (the loop idle: the journal's write and fdatasync on libuv's pool, the workers);
// - its phases: the provider asked (the request built), the journal's `write` and `datasync` calls
//   (FileHandle, their wall time), the answer;
// - what overlapped it: garbage collections (perf_hooks), `postMessage` to a worker (the history
//   worker's group put: its structured clone on this thread), a compaction running (its worker), a
//   segment rotation, timer callbacks (their own run time), the log's `appendFile`.
// - the other threads' running time, split: the history worker's thread (started by the service's open),
//   the threads there from the start (V8's helpers: GC, TurboFan's concurrent compiles; libuv's pool), each
//   thread by id; and history.db's fsyncs in the run (the worker's count).
// Printed: the turns' distribution beside the floor's; then the turns above the p99 against all, each
// stamp's mean and how often each kind of event overlapped. TURNS (total), BLOCK (turns between the
// floor's samples), WARMUP (turns before, 300; FRESH=1: measured in a new conversation), SLICED=1 (bench/agent.ts's slices, its pause and its
// write instead of blocks: the agent row's own tail), NICE_WORKER=n (the history worker's thread at nice
// n), MARK=1 (a line every 100 turns and at each rotation, compaction and postMessage, to read beside
// `node --trace-opt --trace-deopt`), DUMP=file (each turn's start on CLOCK_MONOTONIC and its length, to
// line turns up with `perf record -k CLOCK_MONOTONIC`: docs/design.md, "The row's tail", s17).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { Worker } from 'node:worker_threads';
import type { CompletionRequest, CompletionResult, Provider } from '../src/agent/providers/types';
import { Service } from '../src/service';
import { Compactor } from '../src/store/compaction';
import { Journal } from '../src/store/journal';
import { instantProvider } from './agent';
import { fmt, mainThreadSched, percentile } from './util';

const TURNS = Number(process.env.TURNS ?? 6000);
const BLOCK = Number(process.env.BLOCK ?? 200);
/**
 * SLICED=1: bench/agent.ts's method instead of blocks (150 ms of turns, its 300 ms pause, 40 ms of the
 * store's durable write, `meta.set`, the row's baseline, printed as the floor): the row's own tail.
 */
const SLICED = process.env.SLICED === '1';
/** Turns before the measured ones (not counted). */
const WARMUP = Number(process.env.WARMUP ?? 300);
const TURN_SLICE_MS = 150;
/** The row's pause and its write slice (SETTLE_MS, WRITE_MS: what the slice's first turn follows, as probes). */
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 300);
const WRITE_SLICE_MS = Number(process.env.WRITE_MS ?? 40);

/** Threads there when this module ran (the main thread, V8's helpers, and libuv's pool if tsx's loader started it). */
const firstTids = new Set(readdirSync('/proc/self/task'));
/** Threads started by the service's open (the history worker's; not libuv's pool or V8's helpers, started before). */
let workerTids = new Set<string>();

/**
 * The other threads' (libuv's pool, V8's GC helpers, the workers) time running and waiting for a core,
 * summed, ms; `workerRun`: the part run by the threads the service's open started (the history worker).
 */
function othersSchedstat(): { run: number; wait: number; workerRun: number; v8Run: number; byTid: Map<string, number> } {
  const byTid = new Map<string, number>();
  let run = 0;
  let wait = 0;
  let workerRun = 0;
  let v8Run = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    if (tid === String(process.pid)) continue;
    try {
      const [r, w] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      run += r / 1e6;
      wait += w / 1e6;
      byTid.set(tid, r / 1e6);
      if (workerTids.has(tid)) workerRun += r / 1e6;
      if (firstTids.has(tid)) v8Run += r / 1e6;
    } catch {
      // A thread that ended (a compaction's worker).
    }
  }
  return { run, wait, workerRun, v8Run, byTid };
}

/** The block device holding the data directory (DEVICE, or the first of /sys/block that is not zram or a loop). */
const DEVICE = process.env.DEVICE ?? readdirSync('/sys/block').find((d) => !/^(zram|loop|ram)/.test(d));
/** Write requests the device completed so far (/sys/block/<dev>/stat's fifth field): whoever asked for them. */
const deviceWrites = (): number => (DEVICE !== undefined && existsSync(`/sys/block/${DEVICE}/stat`) ? Number(readFileSync(`/sys/block/${DEVICE}/stat`, 'utf8').trim().split(/\s+/)[4]) : NaN);

const newSpaceUsed = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_used_size ?? 0;

interface Span {
  at: number;
  ms: number;
  what: string;
}
const spans: Span[] = [];
/** Spans recorded only while a turn runs (its phases), reset each turn. */
let inTurn: Span[] | null = null;
/** Set while the floor is sampled: its file calls are not the journal's. */
let sampling = false;
/** The spans recorded while the floor (or, SLICED, the row's baseline writes) was sampled. */
const sampledSpans: Span[] = [];
const record = (what: string, at: number) => {
  const span = { at, ms: performance.now() - at, what };
  if (sampling) {
    sampledSpans.push(span);
    return;
  }
  if (process.env.MARK === '1' && (what === 'journal.rotate' || what === 'compaction' || what === 'worker.postMessage')) console.log(`--- ${what} ended`);
  spans.push(span);
  inTurn?.push(span);
};

function wrapAsync(proto: Record<string, unknown>, name: string, what: string): void {
  const original = proto[name] as (...args: unknown[]) => Promise<unknown>;
  proto[name] = async function (this: unknown, ...args: unknown[]) {
    const at = performance.now();
    try {
      return await original.apply(this, args);
    } finally {
      record(what, at);
    }
  };
}

async function instrument(): Promise<void> {
  const path = join(tmpdir(), `ra-tail-${process.pid}`);
  const fh = await open(path, 'w');
  const proto = Object.getPrototypeOf(fh) as Record<string, unknown>;
  await fh.close();
  await rm(path);
  for (const name of ['write', 'datasync', 'sync', 'appendFile']) wrapAsync(proto, name, `fh.${name}`);
  // The history worker's puts and every other message to a worker: the structured clone runs here.
  const post = Worker.prototype.postMessage;
  // The history worker's requests from their post to the worker's answer (its group put's transaction,
  // commit and answer: the worker's side of the put, from this thread): one span per answer.
  const emit = Worker.prototype.emit;
  const posted = new WeakMap<Worker, number>();
  Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
    if (!posted.has(this)) posted.set(this, performance.now());
    const at = performance.now();
    try {
      return post.apply(this, args);
    } finally {
      record('worker.postMessage', at);
    }
  };
  Worker.prototype.emit = function (this: Worker, event: string | symbol, ...args: unknown[]) {
    const at = posted.get(this);
    if (event === 'message' && at !== undefined) {
      posted.delete(this);
      spans.push({ at, ms: performance.now() - at, what: 'worker request to answer' });
    }
    return emit.call(this, event, ...args);
  };
  // The log's writes (file-logger's held lines, RotatingFile's writeSync on this thread).
  const fs = createRequire(join(process.cwd(), 'bench'))('node:fs') as { writeSync: (...args: unknown[]) => number };
  const writeSync = fs.writeSync;
  fs.writeSync = function (...args: unknown[]) {
    const at = performance.now();
    try {
      return writeSync.apply(this, args);
    } finally {
      record('fs.writeSync (log)', at);
    }
  };
  wrapAsync(Compactor.prototype as unknown as Record<string, unknown>, 'loop', 'compaction');
  wrapAsync(Journal.prototype as unknown as Record<string, unknown>, 'rotateNow', 'journal.rotate');
  // Timer callbacks' own run time (the group put's timer, sweeps, the log's): what a turn may wait behind.
  for (const name of ['setTimeout', 'setInterval'] as const) {
    const original = globalThis[name] as (...args: unknown[]) => unknown;
    (globalThis as Record<string, unknown>)[name] = function (callback: unknown, ...rest: unknown[]) {
      if (typeof callback !== 'function') return original(callback, ...rest);
      const label = `timer ${(callback as { name?: string }).name || 'anonymous'} ${String(rest[0] ?? 0)}ms`;
      return original(
        function (this: unknown, ...args: unknown[]) {
          const at = performance.now();
          try {
            return (callback as (...a: unknown[]) => unknown).apply(this, args);
          } finally {
            record(label, at);
          }
        },
        ...rest,
      );
    };
  }
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'gc mark-compact',
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'gc scavenge',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'gc incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'gc weakcb',
  };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind ?? -1;
      spans.push({ at: entry.startTime, ms: entry.duration, what: kinds[kind] ?? `gc ${kind}` });
    }
  }).observe({ entryTypes: ['gc'] });
}

interface Turn {
  at: number;
  ms: number;
  run: number;
  wait: number;
  /** Chat called to the provider asked: the user message applied and written, the request built. */
  ask: number;
  /** The provider asked to the chat's answer. */
  answer: number;
  write: number;
  datasync: number;
  /** Other threads of the process: running, and waiting for a core. */
  otherRun: number;
  otherWait: number;
  /** The history worker's thread running. */
  workerRun: number;
  /** The threads there before the bench's first file call (V8's helpers) running. */
  v8Run: number;
  /** Each other thread's running time in the turn, by thread id. */
  byTid: Map<string, number>;
  /** Bytes allocated in the young generation (NaN when a scavenge came in the turn). */
  allocated: number;
  scavenges: number;
  /** Its place in its block or slice (0: the first after the floor's samples or the pause). */
  index: number;
  /** Write requests the device completed during the turn (its own and anyone else's). */
  device: number;
}

let asked = 0;
function stampedProvider(): Provider {
  const instant = instantProvider(0);
  return {
    name: 'instant',
    complete(request: CompletionRequest): Promise<CompletionResult> {
      asked = performance.now();
      return instant.complete(request);
    },
  };
}

/** What the mean over the p50 is split by: a turn's or a baseline write's window and its stamps. */
interface Stamped {
  at: number;
  ms: number;
  index: number;
  /** The main thread waiting for a core in it (ms). */
  wait: number;
  device: number;
  datasyncMs?: number;
  writeMs?: number;
  /** The threads there from the start (V8's helpers) running in it (ms). */
  v8Run?: number;
}

/**
 * The mean's excess over the p50, split: each turn (or write) goes to the first cause in the list it
 * meets (an event overlapping its window, or its own stamp past a bound), and a cause's share is
 * (sum of its members' times - their count x the p50) / all: the shares add up to mean - p50. Beside
 * each, how often the cause is met by the items at or under the p50 (an event met as often by quick
 * items is a long window's chance, not a cause).
 */
function meanOverP50(label: string, items: Stamped[], events: Span[]): string[] {
  if (items.length === 0) return [];
  const sorted = items.map((t) => t.ms).sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    );
  const syncP50 = median(items.map((t) => t.datasyncMs ?? 0));
  const writeP50 = median(items.map((t) => t.writeMs ?? 0));
  const deviceP50 = median(items.map((t) => t.device));
  const meets = (what: (name: string) => boolean) => (t: Stamped) => events.some((s) => what(s.what) && s.at <= t.at + t.ms && s.at + s.ms >= t.at);
  // Causes on the item's own path first (a pause of the main thread, its own waits), then the events only
  // beside it, whose overlap a long window meets by chance (see the length-biased mean printed after).
  const causes: Array<[string, (t: Stamped) => boolean]> = [
    ['a compaction running', meets((w) => w === 'compaction')],
    ['a mark-compact (or its marking)', meets((w) => w === 'gc mark-compact' || w === 'gc incremental')],
    ['a scavenge', meets((w) => w === 'gc scavenge')],
    ['first of its slice (after the pause)', (t) => t.index === 0],
    ['main thread waited > 0.3 ms for a core', (t) => t.wait > 0.3],
    ["the first threads ran > 0.3 ms (V8's helpers: TurboFan, marking)", (t) => (t.v8Run ?? 0) > 0.3],
    [`its fdatasync > 2x its p50 (${fmt(syncP50, 3)} ms)`, (t) => (t.datasyncMs ?? 0) > 2 * syncP50],
    [`its write > 2x its p50 (${fmt(writeP50, 3)} ms)`, (t) => (t.writeMs ?? 0) > 2 * writeP50],
    ["the history worker's request (post to answer)", meets((w) => w === 'worker request to answer')],
    ['a log write (writeSync)', meets((w) => w === 'fs.writeSync (log)')],
    [`the device did > ${deviceP50 + 2} writes (others' writeback)`, (t) => t.device > deviceP50 + 2],
    ['none of these', () => true],
  ];
  const quick = items.filter((t) => t.ms <= p50);
  const lines = [`${label}: mean ${fmt(mean, 3)} p50 ${fmt(p50, 3)} ms, mean - p50 ${fmt(mean - p50, 3)} ms; split (first cause met; share of mean - p50, ms):`];
  let left = items;
  for (const [name, when] of causes) {
    const of = left.filter(when);
    left = left.filter((t) => !when(t));
    const sum = of.reduce((n, t) => n + t.ms, 0);
    const share = (sum - of.length * p50) / items.length;
    const metByQuick = quick.filter(when).length / Math.max(1, quick.length);
    lines.push(
      `  ${name.padEnd(50)} ${String(of.length).padStart(5)} (${fmt((of.length / items.length) * 100, 1).padStart(5)}%), mean ${fmt(of.length > 0 ? sum / of.length : NaN, 3).padStart(7)} ms, share ${fmt(share, 3).padStart(7)} ms; met by ${fmt(metByQuick * 100, 1)}% of those <= p50`,
    );
  }
  // An instant at a random moment falls in an item with a chance in proportion to its length: the items it
  // meets then average sum(x^2) / sum(x), not the mean, without being slowed at all.
  const biased = sorted.reduce((n, x) => n + x * x, 0) / sorted.reduce((n, x) => n + x, 0);
  lines.push(`  (an instant at a random moment meets items averaging ${fmt(biased, 3)} ms: the length-biased mean)`);
  return lines;
}

function distribution(xs: number[]): string {
  const sorted = [...xs].sort((a, b) => a - b);
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return `p50 ${fmt(percentile(sorted, 50))} p90 ${fmt(percentile(sorted, 90))} p99 ${fmt(percentile(sorted, 99))} max ${fmt(sorted[sorted.length - 1])} mean ${fmt(mean)} ms (${xs.length})`;
}

async function main(): Promise<void> {
  await instrument();
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-tail-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  // libuv's pool is started by the file calls above; V8's helpers with the process.
  const before = new Set(readdirSync('/proc/self/task'));
  const service = await Service.open({ dataDir: dir, provider: () => stampedProvider() });
  workerTids = new Set(readdirSync('/proc/self/task').filter((tid) => !before.has(tid)));
  // NICE_WORKER=n: the history worker's thread at nice n (what a lower priority for its puts would give).
  if (process.env.NICE_WORKER) for (const tid of workerTids) setPriority(Number(tid), Number(process.env.NICE_WORKER));
  console.log(`threads: ${firstTids.size} at the start (main, V8's helpers), ${before.size} before the open, ${workerTids.size} started by it`);
  const floor: number[] = [];
  const floorFile = await open(join(dir, 'floor'), 'a');
  const overwrite: number[] = [];
  const zeroed = await open(join(dir, 'floor-zeroed'), 'w+');
  const ZEROED_BYTES = 4 * 1024 * 1024;
  await zeroed.write(Buffer.alloc(ZEROED_BYTES), 0, ZEROED_BYTES, 0);
  await zeroed.sync();
  let zeroedAt = 0;
  const record600 = Buffer.alloc(600, 7);
  const turns: Turn[] = [];
  const young: Array<{ at: number; end: number; before: number; after: number }> = [];
  try {
    let conversationId: string | undefined;
    let index = 0;
    const turn = async (keep: boolean) => {
      const phases: Span[] = (inTurn = []);
      const young0 = newSpaceUsed();
      const o0 = othersSchedstat();
      const s0 = mainThreadSched();
      const d0 = deviceWrites();
      const at = performance.now();
      const reply = await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } });
      const end = performance.now();
      const d1 = deviceWrites();
      const s1 = mainThreadSched();
      const o1 = othersSchedstat();
      inTurn = null;
      conversationId = reply.conversation_id;
      if (!keep) return;
      const sum = (what: string) => phases.filter((p) => p.what === what).reduce((n, p) => n + p.ms, 0);
      turns.push({
        at,
        ms: end - at,
        run: s1.run - s0.run,
        wait: s1.wait - s0.wait,
        ask: asked - at,
        answer: end - asked,
        write: sum('fh.write'),
        datasync: sum('fh.datasync'),
        otherRun: o1.run - o0.run,
        otherWait: o1.wait - o0.wait,
        workerRun: o1.workerRun - o0.workerRun,
        v8Run: o1.v8Run - o0.v8Run,
        byTid: new Map([...o1.byTid].map(([tid, ms]) => [tid, ms - (o0.byTid.get(tid) ?? ms)])),
        allocated: NaN,
        scavenges: 0,
        index: index++,
        device: d1 - d0,
      });
      if (process.env.MARK === '1' && turns.length % 100 === 0) console.log(`--- turn ${turns.length}`);
      young.push({ at, end, before: young0, after: newSpaceUsed() });
    };
    for (let i = 0; i < WARMUP; i++) await turn(false);
    // FRESH=1: the measured turns in a new conversation, so a long WARMUP warms the code, not a longer history.
    if (process.env.FRESH === '1') conversationId = undefined;
    const historySyncs0 = (await service.store.history.stats()).syncs;
    if (process.env.MARK === '1') console.log('--- warm-up done');
    const started = performance.now();
    const rowWrites: number[] = [];
    /** The row's baseline writes (SLICED), stamped as the turns are, for the same split of their mean over their p50. */
    const writeStamps: Stamped[] = [];
    while (SLICED && turns.length < TURNS) {
      index = 0;
      const sliceEnd = performance.now() + TURN_SLICE_MS;
      while (performance.now() < sliceEnd) await turn(true);
      await new Promise((done) => setTimeout(done, SETTLE_MS));
      const writesEnd = performance.now() + WRITE_SLICE_MS;
      sampling = true;
      for (let w = 0; performance.now() < writesEnd; w++) {
        const o0 = othersSchedstat();
        const s0 = mainThreadSched();
        const d0 = deviceWrites();
        const t0 = performance.now();
        await service.store.meta.set('bench.baseline', String(rowWrites.length));
        const ms = performance.now() - t0;
        const d1 = deviceWrites();
        const s1 = mainThreadSched();
        const o1 = othersSchedstat();
        rowWrites.push(ms);
        writeStamps.push({ at: t0, ms, index: w, wait: s1.wait - s0.wait, device: d1 - d0, v8Run: o1.v8Run - o0.v8Run });
      }
      sampling = false;
    }
    for (let done = 0; !SLICED && done < TURNS; done += BLOCK) {
      index = 0;
      for (let i = 0; i < BLOCK; i++) await turn(true);
      // The disk's own floor in the same minutes: what the journal does for a record, without the store.
      sampling = true;
      for (let i = 0; i < 100; i++) {
        const t0 = performance.now();
        if (i % 2 === 0) {
          await floorFile.write(record600, 0, record600.length, null);
          await floorFile.datasync();
          floor.push(performance.now() - t0);
        } else {
          await zeroed.write(record600, 0, record600.length, zeroedAt);
          zeroedAt = (zeroedAt + record600.length) % (ZEROED_BYTES - record600.length);
          await zeroed.datasync();
          overwrite.push(performance.now() - t0);
        }
      }
      sampling = false;
    }
    const elapsed = performance.now() - started;
    const stats = service.store.db.stats();
    const historyStats = await service.store.history.stats();
    const gcs = spans.filter((s) => s.what.startsWith('gc') && s.at >= started);
    turns.forEach((t, i) => {
      const within = gcs.filter((g) => g.what === 'gc scavenge' && g.at >= t.at && g.at <= t.at + t.ms).length;
      t.scavenges = within;
      if (within === 0) t.allocated = young[i].after - young[i].before;
    });
    console.log(
      `${turns.length} turns in ${fmt(elapsed / 1000, 1)} s (with the floor's samples); ${stats.compactions} compactions, journal ${fmt(stats.journalBytes / 1024, 0)} KiB live; ` +
        `history.db's fsyncs ${historyStats.syncs - historySyncs0}; ` +
        `load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
    );
    const compactions = spans.filter((s) => s.what === 'compaction');
    const compacting = (at: number, ms: number) => compactions.some((c) => c.at <= at + ms && c.at + c.ms >= at);
    const split = <T>(xs: T[], when: (x: T) => boolean) => [xs.filter(when), xs.filter((x) => !when(x))];
    const [turnsIn, turnsOut] = split(turns, (t) => compacting(t.at, t.ms));
    console.log(`turn:                      ${distribution(turns.map((t) => t.ms))}`);
    console.log(`  while a compaction ran:  ${turnsIn.length > 0 ? distribution(turnsIn.map((t) => t.ms)) : 'none'}`);
    console.log(`  otherwise:               ${distribution(turnsOut.map((t) => t.ms))}`);
    if (SLICED) {
      console.log(`meta.set (the row's write): ${distribution(rowWrites)}`);
      const all = [...spans, ...sampledSpans];
      const sumOf = (t: Stamped, what: string) => all.filter((s) => s.what === what && s.at >= t.at && s.at <= t.at + t.ms).reduce((n, s) => n + s.ms, 0);
      for (const t of turns) {
        (t as Stamped).datasyncMs = t.datasync;
        (t as Stamped).writeMs = t.write;
      }
      for (const w of writeStamps) {
        w.datasyncMs = sumOf(w, 'fh.datasync');
        w.writeMs = sumOf(w, 'fh.write');
      }
      for (const line of meanOverP50('turns', turns, all)) console.log(line);
      for (const line of meanOverP50("the row's writes (meta.set)", writeStamps, all)) console.log(line);
      const turnMean = turns.reduce((n, t) => n + t.ms, 0) / turns.length;
      console.log(`  the row: turn mean / write mean ${fmt(turnMean / (rowWrites.reduce((a, b) => a + b, 0) / rowWrites.length), 2)}x`);
    } else {
      console.log(`bare write + fdatasync:    ${distribution(floor)}`);
      console.log(`  over zeros, same size:   ${distribution(overwrite)}`);
    }
    for (const [name, from, to] of [
      ['first of its block', 0, 1],
      ['2nd-10th', 1, 10],
      ['the rest', 10, Infinity],
    ] as const) {
      const of = turns.filter((t) => t.index >= from && t.index < to);
      if (of.length > 0) console.log(`  ${name.padEnd(24)} ${distribution(of.map((t) => t.ms))}`);
    }
    const journalSync = spans.filter((s) => s.what === 'fh.datasync' && s.at >= started);
    const [syncIn, syncOut] = split(journalSync, (s) => compacting(s.at, s.ms));
    console.log(`the journal's fdatasyncs:  ${distribution(journalSync.map((s) => s.ms))}`);
    if (syncIn.length > 0) console.log(`  while a compaction ran:  ${distribution(syncIn.map((s) => s.ms))}`);
    console.log(`  otherwise:               ${distribution(syncOut.map((s) => s.ms))}`);
    const scavenges = gcs.filter((g) => g.what === 'gc scavenge');
    const allocated = turns.filter((t) => !Number.isNaN(t.allocated)).map((t) => t.allocated);
    console.log(
      `GC: ${scavenges.length} scavenges (one each ${fmt(turns.length / Math.max(1, scavenges.length), 0)} turns; their wall ${scavenges.length > 0 ? distribution(scavenges.map((g) => g.ms)) : '-'}), ` +
        `${gcs.filter((g) => g.what === 'gc mark-compact').length} mark-compacts; young generation allocated a turn: median ${fmt(
          percentile(
            [...allocated].sort((a, b) => a - b),
            50,
          ) / 1024,
          1,
        )} KiB`,
    );
    if (process.env.DUMP) {
      // Each turn's start and length on CLOCK_MONOTONIC (ms), for lining turns up with `perf record -k CLOCK_MONOTONIC`.
      const offset = Number(process.hrtime.bigint()) / 1e6 - performance.now();
      await writeFile(process.env.DUMP, JSON.stringify(turns.map((t) => [t.at + offset, t.ms, t.index])));
    }
    const sorted = turns.map((t) => t.ms).sort((a, b) => a - b);
    const p99 = percentile(sorted, 99);
    const p50 = percentile(sorted, 50);
    const slow = turns.filter((t) => t.ms >= p99);
    const mean = (ts: Turn[], f: (t: Turn) => number) => fmt(ts.reduce((n, t) => n + f(t), 0) / ts.length);
    const fields: Array<[string, (t: Turn) => number]> = [
      ['wall', (t) => t.ms],
      ['main running', (t) => t.run],
      ['main waiting (core)', (t) => t.wait],
      ['main idle', (t) => t.ms - t.run - t.wait],
      ['others running', (t) => t.otherRun],
      ['others waiting', (t) => t.otherWait],
      ['history worker running', (t) => t.workerRun],
      ["V8's helpers running", (t) => t.v8Run],
      ['chat to ask', (t) => t.ask],
      ['ask to answer', (t) => t.answer],
      ['fh.write', (t) => t.write],
      ['fh.datasync', (t) => t.datasync],
      ['scavenges', (t) => t.scavenges],
    ];
    const firsts = turns.filter((t) => t.index === 0);
    console.log(`means, all turns / the ${slow.length} at or above the p99 (${fmt(p99)} ms) / the ${firsts.length} first of their block or slice:`);
    const medianOf = (ts: Turn[], f: (t: Turn) => number) =>
      percentile(
        ts.map(f).sort((a, b) => a - b),
        50,
      );
    for (const [name, f] of fields) {
      // Mean minus median over all turns: how much of the wall's mean over its p50 each stamp carries.
      const over = fmt(turns.reduce((n, t) => n + f(t), 0) / turns.length - medianOf(turns, f), 3);
      console.log(`  ${name.padEnd(20)} ${mean(turns, f).padStart(8)} / ${mean(slow, f).padStart(8)} / ${mean(firsts, f).padStart(8)}; mean - median ${over}`);
    }
    // Which events make a turn slow: an event counts for a turn when it was under way at its start or
    // began within its first p50 ms, a window as long for every turn (a long turn overlaps more events
    // only because it is long). The share of such turns that end up at or above the p99, against the rest's.
    const threadMeans = (ts: Turn[]) => {
      const sums = new Map<string, number>();
      for (const t of ts) for (const [tid, ms] of t.byTid) sums.set(tid, (sums.get(tid) ?? 0) + ms);
      return sums;
    };
    const allThreads = threadMeans(turns);
    const slowThreads = threadMeans(slow);
    console.log(
      `other threads running, mean a turn, all / slow (by thread id; history worker ${[...workerTids].join(',')}): ` +
        [...slowThreads]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 8)
          .map(([tid, ms]) => `${tid} ${fmt((allThreads.get(tid) ?? 0) / turns.length, 3)} / ${fmt(ms / slow.length, 2)}`)
          .join(', '),
    );
    const kindsOf = [...new Set(spans.map((s) => s.what))].sort();
    console.log(`P(turn >= p99) when an event was under way at its start or began in its first ${fmt(p50)} ms, and when not:`);
    for (const what of kindsOf) {
      const of = spans.filter((s) => s.what === what);
      const near = (t: Turn) => of.some((s) => s.at <= t.at + p50 && s.at + s.ms >= t.at);
      const [hit, miss] = split(turns, near);
      const rate = (ts: Turn[]) => (ts.length === 0 ? '-' : `${fmt((ts.filter((t) => t.ms >= p99).length / ts.length) * 100, 1)}%`);
      console.log(`  ${what.padEnd(28)} ${rate(hit).padStart(6)} of ${String(hit.length).padStart(5)} turns / ${rate(miss).padStart(6)} of ${miss.length}`);
    }
    const over = turns.filter((t) => t.ms > 2 * p50);
    console.log(`turns over 2x the p50: ${over.length} (${fmt((over.length / turns.length) * 100, 1)}%), adding ${fmt(over.reduce((n, t) => n + t.ms - p50, 0) / turns.length, 3)} ms to the mean`);
    const overlapping = (t: Turn) => spans.filter((s) => s.at + s.ms >= t.at && s.at <= t.at + t.ms);
    for (const t of [...turns].sort((a, b) => b.ms - a.ms).slice(0, 12)) {
      const events = overlapping(t)
        .filter((s) => s.what !== 'fh.write' && s.what !== 'fh.datasync' && s.what !== 'compaction')
        .map((s) => `${s.what} ${fmt(s.ms, 1)}`);
      console.log(
        `  ${fmt(t.ms, 1)} ms${compacting(t.at, t.ms) ? ' (compacting)' : ''}: main running ${fmt(t.run, 1)}, waiting ${fmt(t.wait, 1)}, idle ${fmt(t.ms - t.run - t.wait, 1)}; ` +
          `others running ${fmt(t.otherRun, 1)} (history worker ${fmt(t.workerRun, 1)}, V8 ${fmt(t.v8Run, 1)}), waiting ${fmt(t.otherWait, 1)}; ask ${fmt(t.ask, 1)}, answer ${fmt(t.answer, 1)}; write ${fmt(t.write, 1)}, datasync ${fmt(t.datasync, 1)}; ${events.join(', ') || 'nothing else'}`,
      );
    }
  } finally {
    await floorFile.close();
    await zeroed.close();
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
