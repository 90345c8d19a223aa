// What a chat's longest turns are made of, alone and during login bursts (issue 25):
// `npx tsx bench/burst-turn-trace.ts`. The service and attacker of bench/auth.ts; periods of the chat
// alone and during each burst, rotated over RA_TRACE_ROUNDS rounds. Each turn is split by the main
// thread's own scheduler accounting (/proc/self/task/<pid>/schedstat: time running, time runnable but
// waiting for a core) and the rest (the loop idle: waiting for the journal's file work on libuv's pool,
// the history worker, a timer); beside it the garbage collections and the journal's file calls
// (FileHandle write and datasync, their wall time), compactions (their worker's life) and the listening
// handle's accepts that overlapped it. The longest turns of each period kind are printed, and every kind's
// sums over its turns longer than 10 ms.
// RA_TRACE_KINDS: the periods of a round, comma-separated (`alone`, `alone again` or another name starting
// with `alone`; `login`, `ws` or `404`, then `one` or `600`); RA_TRACE_ALONE_MS: an alone period's length;
// RA_TRACE_JSON: a file to write every turn and span to (for a comparison of methods, say).
import { open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { Compactor } from '../src/store/compaction';
import { Attacker, openBenchService } from './auth';
import { derivationLoad } from './bundled';
import { fmt, mainThreadSched } from './util';

const ROUNDS = Number(process.env.RA_TRACE_ROUNDS ?? 4);
const KINDS = (process.env.RA_TRACE_KINDS ?? 'alone,login one,ws one,login 600,ws 600').split(',').map((kind) => kind.trim());
const ALONE_MS = Number(process.env.RA_TRACE_ALONE_MS ?? 1500);
const BURST_PATHS: Record<string, string> = { login: '/auth', ws: '/ws', '404': '/nowhere' };

interface Span {
  at: number;
  ms: number;
  what: string;
}
const spans: Span[] = [];

/** Times every FileHandle write and datasync (the journal's), by wrapping the prototype's methods. */
async function traceFileHandles(): Promise<void> {
  const path = join(tmpdir(), `ra-trace-${process.pid}`);
  const fh = await open(path, 'w');
  const proto = Object.getPrototypeOf(fh) as Record<string, (...args: unknown[]) => Promise<unknown>>;
  await fh.close();
  await rm(path);
  const compactor = Compactor.prototype as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const loop = compactor.loop;
  // A compaction (its worker's whole life): what a chat alone period's longest turn may have met.
  compactor.loop = async function (this: unknown, ...args: unknown[]) {
    const at = performance.now();
    try {
      return await loop.apply(this, args);
    } finally {
      spans.push({ at, ms: performance.now() - at, what: 'compaction' });
    }
  };
  for (const name of ['write', 'datasync', 'sync', 'appendFile', 'writeFile']) {
    const original = proto[name];
    proto[name] = async function (this: unknown, ...args: unknown[]) {
      const at = performance.now();
      try {
        return await original.apply(this, args);
      } finally {
        spans.push({ at, ms: performance.now() - at, what: name });
      }
    };
  }
}

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'gc mark-compact',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'gc scavenge',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'gc incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'gc weakcb',
};

/**
 * Times each connection the service's listening handle is given (its `onconnection`, the refusal at accept
 * included): libuv calls it once per connection of an accept batch, all in one tick.
 */
function traceAccepts(service: unknown): void {
  const handle = (service as { http?: { server?: { _handle?: { onconnection?: (...args: unknown[]) => void } } } }).http?.server?._handle;
  const onconnection = handle?.onconnection;
  if (!handle || !onconnection) return console.log('(accepts not traced: no listening handle found)');
  handle.onconnection = function (this: unknown, ...args: unknown[]) {
    const at = performance.now();
    try {
      onconnection.apply(this, args);
    } finally {
      spans.push({ at, ms: performance.now() - at, what: 'accept' });
    }
  };
}

interface Turn {
  kind: string;
  round: number;
  at: number;
  ms: number;
  run: number;
  wait: number;
  /** Password checks running when the turn began or ended. */
  checks: number;
}

async function main(): Promise<void> {
  await traceFileHandles();
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind ?? -1;
      spans.push({ at: entry.startTime, ms: entry.duration, what: GC_KINDS[kind] ?? `gc ${kind}` });
    }
  }).observe({ entryTypes: ['gc'] });
  const { dir, service } = await openBenchService();
  const attacker = await Attacker.start();
  const turns: Turn[] = [];
  const periods: { kind: string; from: number; to: number }[] = [];
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const period = async (kind: string, round: number, until: Promise<unknown>) => {
    let done = false;
    void until.finally(() => (done = true));
    let conversationId: string | undefined;
    let count = 0;
    const from = performance.now();
    while (!done || count < 20) {
      const s0 = mainThreadSched();
      const checksBefore = derivationLoad().running;
      const at = performance.now();
      const reply = await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } });
      const ms = performance.now() - at;
      const s1 = mainThreadSched();
      const checks = Math.max(checksBefore, derivationLoad().running);
      turns.push({ kind, round, at, ms, run: s1.run - s0.run, wait: s1.wait - s0.wait, checks });
      conversationId = reply.conversation_id;
      count += 1;
    }
    periods.push({ kind, from, to: performance.now() });
  };
  try {
    const { port } = await service.start();
    traceAccepts(service);
    await period('warm-up', -1, sleep(300));
    const kinds = KINDS;
    for (let round = 0; round < ROUNDS; round += 1) {
      for (let i = 0; i < kinds.length; i += 1) {
        const kind = kinds[(i + round) % kinds.length];
        if (kind.startsWith('alone')) await period(kind, round, sleep(ALONE_MS));
        else await period(kind, round, attacker.fire(port, BURST_PATHS[kind.split(' ')[0]], kind.endsWith('600')));
      }
    }
    if (process.env.RA_TRACE_JSON) await writeFile(process.env.RA_TRACE_JSON, JSON.stringify({ rounds: ROUNDS, kinds, turns, spans, periods }));
    const overlapping = (turn: Turn) => spans.filter((s) => s.at + s.ms >= turn.at && s.at <= turn.at + turn.ms);
    const describe = (turn: Turn) => {
      const by = new Map<string, { n: number; ms: number; max: number }>();
      for (const s of overlapping(turn)) {
        const e = by.get(s.what) ?? { n: 0, ms: 0, max: 0 };
        e.n += 1;
        e.ms += s.ms;
        e.max = Math.max(e.max, s.ms);
        by.set(s.what, e);
      }
      const parts = [...by].map(([what, e]) => `${what} ${e.n}x ${fmt(e.ms, 1)} (max ${fmt(e.max, 1)})`);
      return (
        `${fmt(turn.ms, 1)} ms (round ${turn.round + 1}): main running ${fmt(turn.run, 1)}, waiting for a core ${fmt(turn.wait, 1)}, idle ${fmt(turn.ms - turn.run - turn.wait, 1)}` +
        `${turn.checks ? `, a password check running` : ''}; ${parts.join(', ') || 'nothing else'}`
      );
    };
    /**
     * What filled most of a turn: the journal's datasync or write (their wall time, on libuv's pool) when
     * over 60% / 50% of it, the main thread waiting for a core when over half, a collection over 30%;
     * else `mixed`. A label for reading a run, not a measure.
     */
    const filledBy = (turn: Turn) => {
      const longest = (what: string) =>
        Math.max(
          0,
          ...overlapping(turn)
            .filter((s) => s.what === what)
            .map((s) => s.ms),
        );
      if (longest('datasync') > 0.6 * turn.ms) return 'datasync';
      if (longest('write') > 0.5 * turn.ms) return 'write';
      if (turn.wait > 0.5 * turn.ms) return 'core';
      if (Math.max(longest('gc mark-compact'), longest('gc scavenge')) > 0.3 * turn.ms) return 'gc';
      return `mixed: running ${fmt(turn.run, 0)}, core ${fmt(turn.wait, 0)}`;
    };
    for (const kind of kinds) {
      const mine = turns.filter((t) => t.kind === kind);
      const rounds = Array.from({ length: ROUNDS }, (_, r) => Math.max(...mine.filter((t) => t.round === r).map((t) => t.ms)));
      const long = mine.filter((t) => t.ms > 10);
      const sum = (f: (t: Turn) => number) =>
        fmt(
          long.reduce((n, t) => n + f(t), 0),
          0,
        );
      console.log(
        `${kind}: ${mine.length} turns, rounds' longest ${rounds.map((r) => fmt(r, 0)).join(' ')} ms; ${long.length} turns over 10 ms: ${sum((t) => t.ms)} ms, ` +
          `main running ${sum((t) => t.run)}, waiting for a core ${sum((t) => t.wait)}, idle ${sum((t) => t.ms - t.run - t.wait)}`,
      );
      const inKind = (what: string) => spans.filter((s) => s.what === what && periods.some((p) => p.kind === kind && s.at + s.ms >= p.from && s.at <= p.to));
      const gcs = (what: string) => {
        const found = inKind(what);
        return `${found.length} ${what} (${fmt(
          found.reduce((n, s) => n + s.ms, 0),
          0,
        )} ms, longest ${fmt(Math.max(0, ...found.map((s) => s.ms)), 1)})`;
      };
      const periodMs = periods.filter((p) => p.kind === kind).reduce((n, p) => n + p.to - p.from, 0);
      console.log(`  ${fmt(periodMs, 0)} ms of periods: ${gcs('gc mark-compact')}, ${gcs('gc scavenge')}`);
      for (const turn of [...mine].sort((a, b) => b.ms - a.ms).slice(0, 5)) console.log(`  ${describe(turn)}`);
      // Each round's longest turn (the figure bench/auth.ts takes the median of) named by what filled most of it.
      const longestOf = (r: number) => mine.filter((t) => t.round === r).reduce((a, b) => (b.ms > a.ms ? b : a));
      console.log(`  rounds' longest, each by what filled it: ${Array.from({ length: ROUNDS }, (_, r) => `${fmt(longestOf(r).ms, 0)} (${filledBy(longestOf(r))})`).join(' ')}`);
    }
  } finally {
    attacker.stop();
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
