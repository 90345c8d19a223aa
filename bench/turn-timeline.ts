// One 0-tool turn's timeline around its fdatasync (issue 25): many turns of one conversation with an
// instant provider, after a warm-up. Each turn is stamped (performance.now) where it is called, where the
// model is asked, where the journal's write and fdatasync start and end (FileHandle.prototype patched:
// on the main thread only the journal calls datasync), and where the turn's promise settles. Printed:
// the median of each phase (wall), so the work done after the fdatasync (on the turn's critical path) is
// told from the work done while it runs, and the main thread's CPU a turn (its schedstat); also how long
// the main thread spends in each hand-off to libuv's pool (the write's and the fdatasync's calls, until
// they return). PROFILE=1: the main thread's sampled self time a turn by function within each phase
// (V8's profiler, samples placed in a turn's phase by their time; PROFILE_TOP functions each).
// `npx tsx bench/turn-timeline.ts` (TURNS, WARM; ROOT=<another worktree>: its service, e.g. main's).
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { CompletionRequest, CompletionResult, Provider } from '../src/agent/providers/types';
import type { Service as ServiceClass } from '../src/service';
import { instantProvider } from './agent';
import { startProfiler, type CpuProfile } from './stall-trace';
import { fmt, mainThreadCpuMs } from './util';

interface Stamp {
  at: number;
  cpu: number;
}

// The schedstat's read (a file read) before the start's time and after the end's: not in the turn's wall.
const started = (): Stamp => {
  const cpu = mainThreadCpuMs();
  return { at: performance.now(), cpu };
};
const ended = (): Stamp => ({ at: performance.now(), cpu: mainThreadCpuMs() });

async function main(): Promise<void> {
  const turns = Number(process.env.TURNS ?? 1000);
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-timeline-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  // The turn's stamps, filled by the patched calls while it runs.
  let marks: Record<string, Stamp> = {};
  const mark = (name: string) => {
    // The time alone: reading the schedstat (a file read) at every mark added 0.02-0.07 ms to the short phases.
    if (!(name in marks)) marks[name] = { at: performance.now(), cpu: 0 };
  };
  const probe = await open(join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void>; write: (...args: unknown[]) => Promise<unknown> };
  await probe.close();
  const { datasync, write } = proto;
  let writes = 0;
  proto.write = async function (this: unknown, ...args: unknown[]) {
    const n = ++writes;
    mark(`write${n}`);
    try {
      const written = write.apply(this, args) as Promise<unknown>;
      mark(`handed${n}`);
      return await written;
    } finally {
      mark(`written${n}`);
    }
  };
  proto.datasync = async function (this: unknown) {
    mark('sync');
    const synced = datasync.call(this);
    mark('syncHanded');
    // The loop's next check phase: the main thread's own work in the fdatasync's wait (the journal's
    // syncAsked: the statements applied, the reply's event and log line) is done by then. A completion
    // that came meanwhile is seen at the next poll, right after: `idle -> synced` near zero.
    setImmediate(() => mark('idle'));
    try {
      return await synced;
    } finally {
      mark('synced');
    }
  };
  const instant = instantProvider(0);
  const provider: Provider = {
    name: 'instant',
    complete(request: CompletionRequest): Promise<CompletionResult> {
      mark('asked');
      return instant.complete(request);
    },
  };
  const { Service } = require(join(resolve(process.env.ROOT ?? join(__dirname, '..')), 'src', 'service')) as { Service: typeof ServiceClass };
  const service = await Service.open({ dataDir: dir, provider: () => provider });
  try {
    let conversationId: string | undefined;
    const rows: Array<Record<string, Stamp>> = [];
    const turn = async (keep: boolean) => {
      marks = { start: started() };
      writes = 0;
      const out = await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } }, (e) => {
        if (e.event === 'chat.message' && e.message.role === 'assistant') mark('replyEvent');
      });
      marks.end = ended();
      conversationId = out.conversation_id;
      if (keep) rows.push(marks);
    };
    for (let i = 0; i < Number(process.env.WARM ?? 300); i++) await turn(false);
    const profiler = process.env.PROFILE ? await startProfiler(100) : undefined;
    for (let i = 0; i < turns; i++) await turn(true);
    const profile = profiler ? await profiler() : undefined;
    const phases: Array<[string, string, string]> = [
      ['called -> user message write starts', 'start', 'write1'],
      ['its write', 'write1', 'written1'],
      ['called -> model asked', 'start', 'asked'],
      ['model asked -> reply write starts', 'asked', 'write2'],
      ['its write', 'write2', 'written2'],
      ['reply written -> fdatasync starts', 'written2', 'sync'],
      ['fdatasync', 'sync', 'synced'],
      ['fdatasync done -> reply event', 'synced', 'replyEvent'],
      ['reply event -> turn settles', 'replyEvent', 'end'],
      ['whole turn', 'start', 'end'],
      ['user message write: the call (hand-off)', 'write1', 'handed1'],
      ["reply's write: the call (hand-off)", 'write2', 'handed2'],
      ['fdatasync: the call (hand-off)', 'sync', 'syncHanded'],
    ];
    const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * q)];
    const median = (xs: number[]) => quantile(xs, 0.5);
    const complete = rows.filter((r) => phases.every(([, a, b]) => r[a] && r[b]));
    console.log(`${complete.length} of ${rows.length} turns with every stamp (one fdatasync each); medians:`);
    for (const [name, a, b] of phases) console.log(`  ${name.padEnd(36)} ${fmt(median(complete.map((r) => r[b].at - r[a].at)), 3)} ms`);
    // Whether the main thread's work in the fdatasync's wait is on the turn's path: it is when the sync's
    // completion waited for it (seen within 0.03 ms of the main thread being free).
    const waits = complete.filter((r) => r.idle).map((r) => ({ busy: r.idle.at - r.sync.at, after: r.synced.at - r.idle.at }));
    console.log(
      `  main thread busy in the fdatasync's wait ${fmt(median(waits.map((w) => w.busy)), 3)} ms; the sync done by then (seen within 0.03 ms) in ${fmt((100 * waits.filter((w) => w.after < 0.03).length) / Math.max(1, waits.length), 1)}% of turns; idle -> synced p10 / p50 ${fmt(
        quantile(
          waits.map((w) => w.after),
          0.1,
        ),
        3,
      )} / ${fmt(
        quantile(
          waits.map((w) => w.after),
          0.5,
        ),
        3,
      )} ms`,
    );
    // The schedstat moves at the scheduler's ticks: told over the whole turn only.
    console.log(`  main thread CPU a turn (mean)        ${fmt(complete.reduce((sum, r) => sum + r.end.cpu - r.start.cpu, 0) / complete.length, 3)} ms`);
    if (profile) {
      const spans: Array<[string, string, string]> = [
        ['called -> user message write starts', 'start', 'write1'],
        ['its write starts -> model asked', 'write1', 'asked'],
        ['model asked -> reply write starts', 'asked', 'write2'],
        ['reply write starts -> fdatasync starts', 'write2', 'sync'],
        ["fdatasync's wait, main thread busy", 'sync', 'idle'],
        ["fdatasync's wait, after", 'idle', 'synced'],
        ['fdatasync done -> turn settles', 'synced', 'end'],
      ];
      printPhaseProfile(profile, complete, spans, Number(process.env.PROFILE_TOP ?? 12));
    }
  } finally {
    proto.datasync = datasync;
    proto.write = write;
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main();

/**
 * Self time a turn by function within each phase: each sample is placed in the turn's phase its time falls
 * in (the profiler's clock is the monotonic one performance.now() counts from timeOrigin on: microseconds
 * since an offset read once).
 */
function printPhaseProfile(profile: CpuProfile, turns: Array<Record<string, Stamp>>, phases: Array<[string, string, string]>, top: number): void {
  const offset = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  const us = (stamp: Stamp) => stamp.at * 1000 + offset;
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const name = (id: number) => {
    const frame = frames.get(id)!;
    return `${frame.functionName || '(anonymous)'} ${frame.url.replace(/.*\/(src|node_modules|bench)\//, '$1/')}${frame.url ? `:${frame.columnNumber}` : ''}`;
  };
  const byPhase = new Map<string, Map<string, number>>();
  let at = profile.startTime;
  let turn = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i];
    const weight = profile.timeDeltas[i + 1] ?? 0;
    while (turn < turns.length && us(turns[turn].end) < at) turn++;
    if (turn >= turns.length) break;
    const marks = turns[turn];
    const phase = phases.find(([, from, to]) => us(marks[from]) <= at && at < us(marks[to]));
    if (!phase) continue;
    const counts = byPhase.get(phase[0]) ?? new Map<string, number>();
    byPhase.set(phase[0], counts);
    const fn = name(profile.samples[i]);
    counts.set(fn, (counts.get(fn) ?? 0) + weight);
  }
  for (const [phase] of phases) {
    const counts = byPhase.get(phase);
    if (!counts) continue;
    const busy = [...counts].filter(([fn]) => !fn.startsWith('(idle)')).reduce((sum, [, t]) => sum + t, 0);
    console.log(`  ${phase}: sampled ${fmt(busy / turns.length, 1)} us a turn not idle; self, us a turn:`);
    for (const [fn, t] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`    ${fmt(t / turns.length, 1).padStart(6)}  ${fn}`);
  }
}
