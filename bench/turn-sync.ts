// Is a 0-tool turn's fdatasync the baseline's (issue 25's agent row; docs/design.md, s28 agent28)? One
// service, slices of turns and slices of its baseline (`meta.set`, bench/agent.ts's) alternating as in
// bench/agent.ts, run under `perf record` with the syscall and block tracepoints, so each journal fdatasync
// is timed on the pool thread that makes it (enter -> exit) and classed by what the disk was asked in it
// (`block_rq_issue`: the data write, the ext4 journal's commit blocks) and what the process wrote since the
// previous one (the journal's bytes, other files': the log, history.db). Needs `perf` with tracepoints
// readable (root or perf_event_paranoid <= 1) and `npm run build` (it runs the bundle, as the row does).
// `npx tsx bench/turn-sync.ts` (SLICES, WARM; DIR: where the data directory is made). Probes, each on every
// other baseline slice (printed as "probe"), to tell causes apart: SPIN=<ms> of main-thread work in the
// sync's wait (as the turn's statements and log line are), LINE=1 a 250 B line appended to another file in
// the wait (as the held log line is), PRE=<bytes> appended to the journal's file by the pool before each
// write (as the user message's record is; the data directory is thrown away: its journal no longer replays),
// GAP=<ms> the main thread idle (Atomics.wait) before each write, as a turn's syncs are ~0.5 ms apart.
import { execFileSync, spawnSync } from 'node:child_process';
import { openSync, readFileSync, readdirSync, readlinkSync, writeFileSync, writeSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { instantProvider } from './agent';
import { serviceClass } from './bundled';
import { fmt, percentile } from './util';

/** A slice's phase, told to the trace by a write to /dev/null of MARK + its index. */
const PHASES = ['turns', 'pause', 'baseline', 'end', 'probe'] as const;
const MARK = 7770;

/** The traced process: the service, its turns and baseline writes in slices. */
async function traced(): Promise<void> {
  const devNull = openSync('/dev/null', 'w');
  const mark = (phase: (typeof PHASES)[number]) => writeSync(devNull, Buffer.alloc(MARK + PHASES.indexOf(phase)));
  const Service = serviceClass();
  const dir = await mkdtemp(join(process.env.DIR ?? tmpdir(), 'ra-bench-turn-sync-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => instantProvider(0) });
  // The probes reach the journal's own hook and file: bench-only, through the bundle's private fields.
  const journal = (service.store.db as unknown as { journal: { syncAsked: () => void; fh: { write: (b: Buffer) => Promise<unknown> } } }).journal;
  const spin = Number(process.env.SPIN ?? 0);
  const pre = Number(process.env.PRE ?? 0);
  const other = process.env.LINE ? openSync(join(dir, 'other.log'), 'a') : undefined;
  const line = Buffer.from(`${'x'.repeat(249)}\n`);
  const gap = Number(process.env.GAP ?? 0);
  const idle = new Int32Array(new SharedArrayBuffer(4));
  const probing = spin > 0 || pre > 0 || gap > 0 || other !== undefined;
  let probe = false;
  const asked = journal.syncAsked;
  journal.syncAsked = () => {
    asked();
    if (!probe) return;
    if (other !== undefined) writeSync(other, line);
    const until = performance.now() + spin;
    while (performance.now() < until);
  };
  try {
    let conversationId: string | undefined;
    const turn = async () => {
      conversationId = (await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } })).conversation_id;
    };
    for (let i = 0; i < Number(process.env.WARM ?? 1000); i++) await turn();
    const turns: number[] = [];
    const writes: number[] = [];
    for (let slice = 0; slice < Number(process.env.SLICES ?? 20); slice++) {
      mark('turns');
      let until = performance.now() + 150;
      while (performance.now() < until) {
        const t0 = performance.now();
        await turn();
        turns.push(performance.now() - t0);
      }
      mark('pause');
      await new Promise((resolve) => setTimeout(resolve, 300));
      probe = probing && slice % 2 === 1;
      mark(probe ? 'probe' : 'baseline');
      until = performance.now() + 40;
      while (performance.now() < until) {
        const t0 = performance.now();
        // The thread idle (not spinning) for `gap` ms, as between a turn's syncs.
        if (probe && gap > 0) Atomics.wait(idle, 0, 0, gap);
        if (probe && pre > 0) {
          await journal.fh.write(Buffer.alloc(pre, 0x20));
          await new Promise((resolve) => setImmediate(resolve));
        }
        await service.store.meta.set('bench.baseline', String(writes.length));
        if (!probe) writes.push(performance.now() - t0);
      }
      probe = false;
      mark('end');
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    turns.sort((a, b) => a - b);
    writes.sort((a, b) => a - b);
    // The files behind the process's fds, for the trace's windows (the log, history.db and its WAL).
    const files: Record<number, string> = {};
    for (const fd of readdirSync('/proc/self/fd')) {
      try {
        const target = readlinkSync(`/proc/self/fd/${fd}`);
        if (target.startsWith(dir)) files[Number(fd)] = target.slice(dir.length + 1);
      } catch {
        // Closed meanwhile (the readdir's own fd).
      }
    }
    writeFileSync(process.env.TURN_SYNC_FDS!, JSON.stringify(files));
    console.log(`turn mean ${fmt(mean(turns), 3)} ms p50 ${fmt(percentile(turns, 50), 3)}; baseline write mean ${fmt(mean(writes), 3)} p50 ${fmt(percentile(writes, 50), 3)} (perf recording)`);
  } finally {
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

interface Sync {
  ms: number;
  /** The block requests issued while it ran, e.g. "WS:4096" (the data write), "WSM:4096" (a journal commit's). */
  requests: string[];
  /** Bytes written since the previous fdatasync: to the journal's file, and to any other file, by fd. */
  journalBytes: number;
  others: Set<string>;
}

const hex = (args: string, name: string) => parseInt(new RegExp(`${name}: (0x[0-9a-f]+)`).exec(args)?.[1] ?? 'NaN', 16);

/** `perf script`'s lines into each phase's fdatasyncs of the journal's file. */
export function readTrace(text: string, files: Record<number, string>): Map<string, Sync[]> {
  const line = /^\s*.+?\s+(\d+)\s+\[\d+\]\s+(\d+\.\d+):\s+(\S+):\s*(.*)$/;
  const events = text
    .split('\n')
    .map((l) => line.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ tid: Number(m[1]), at: Number(m[2]) * 1000, name: m[3], args: m[4] }));
  // The journal's file: the one fd fdatasynced.
  const synced = new Map<number, number>();
  for (const e of events) if (e.name.endsWith('sys_enter_fdatasync')) synced.set(hex(e.args, 'fd'), (synced.get(hex(e.args, 'fd')) ?? 0) + 1);
  const journalFd = [...synced].sort((a, b) => b[1] - a[1])[0]?.[0];
  const phases = new Map<string, Sync[]>();
  let phase = 'warm-up';
  let window = { journalBytes: 0, others: new Set<string>() };
  const open = new Map<number, { at: number; phase: string; sync: Sync }>();
  for (const e of events) {
    if (e.name.endsWith('sys_enter_write') || e.name.endsWith('sys_enter_pwrite64')) {
      const fd = hex(e.args, 'fd');
      const count = hex(e.args, 'count');
      if (count >= MARK && count < MARK + PHASES.length) phase = PHASES[count - MARK];
      else if (fd === journalFd) window.journalBytes += count;
      else if (files[fd] !== undefined) window.others.add(files[fd]);
    } else if (e.name.endsWith('sys_enter_fdatasync') && hex(e.args, 'fd') === journalFd) {
      open.set(e.tid, { at: e.at, phase, sync: { ms: 0, requests: [], ...window } });
      window = { journalBytes: 0, others: new Set() };
    } else if (e.name.endsWith('sys_exit_fdatasync') && open.has(e.tid)) {
      const { at, phase: of, sync } = open.get(e.tid)!;
      open.delete(e.tid);
      sync.ms = e.at - at;
      phases.set(of, [...(phases.get(of) ?? []), sync]);
    } else if (e.name === 'block:block_rq_issue') {
      const [, rw, bytes] = e.args.split(/\s+/);
      for (const { sync } of open.values()) sync.requests.push(`${rw}:${bytes}`);
    }
  }
  return phases;
}

function report(phases: Map<string, Sync[]>): void {
  const p50 = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    );
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (const phase of ['turns', 'baseline', 'probe']) {
    const syncs = phases.get(phase) ?? [];
    if (syncs.length === 0) continue;
    const ms = syncs.map((s) => s.ms);
    console.log(
      `${phase}: ${syncs.length} fdatasyncs, p50 ${fmt(p50(ms), 3)} ms, mean ${fmt(mean(ms), 3)}; journal bytes a sync p50 ${p50(syncs.map((s) => s.journalBytes))}; ` +
        `written since the previous sync: ${[...new Set(syncs.flatMap((s) => [...s.others]))].map((f) => `${f} ${fmt((100 * syncs.filter((s) => s.others.has(f)).length) / syncs.length, 0)}%`).join(', ') || 'no other file'}`,
    );
    const classes = new Map<string, number[]>();
    for (const s of syncs) {
      const key = s.requests.join(' ') || '(none)';
      classes.set(key, [...(classes.get(key) ?? []), s.ms]);
    }
    for (const [key, xs] of [...classes].sort((a, b) => b[1].length - a[1].length).slice(0, 3)) {
      console.log(`  disk asked ${key.padEnd(16)} ${fmt((100 * xs.length) / syncs.length, 0).padStart(3)}%: p50 ${fmt(p50(xs), 3)} ms, mean ${fmt(mean(xs), 3)}`);
    }
  }
}

async function main(): Promise<void> {
  if (process.env.TURN_SYNC_TRACED === '1') return traced();
  const scratch = await mkdtemp(join(tmpdir(), 'ra-turn-sync-perf-'));
  const data = join(scratch, 'perf.data');
  const fds = join(scratch, 'fds.json');
  const events = ['syscalls:sys_enter_fdatasync', 'syscalls:sys_exit_fdatasync', 'syscalls:sys_enter_write', 'syscalls:sys_enter_pwrite64', 'block:block_rq_issue'];
  console.log(
    `load before: ${loadavg()
      .map((l) => fmt(l))
      .join(' ')}`,
  );
  const run = spawnSync('perf', ['record', '-q', '-o', data, ...events.flatMap((e) => ['-e', e]), '--', process.execPath, ...process.execArgv, __filename], {
    stdio: 'inherit',
    env: { ...process.env, TURN_SYNC_TRACED: '1', TURN_SYNC_FDS: fds },
  });
  if (run.status !== 0) throw new Error(`perf record failed (${run.error?.message ?? `status ${run.status}`}): is perf installed and may it read tracepoints?`);
  console.log(
    `load after: ${loadavg()
      .map((l) => fmt(l))
      .join(' ')}`,
  );
  const text = execFileSync('perf', ['script', '-i', data], { maxBuffer: 1 << 30, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  report(readTrace(text, JSON.parse(readFileSync(fds, 'utf8')) as Record<number, string>));
  await rm(scratch, { recursive: true, force: true });
}

if (require.main === module) void main();
