// What the longest stalls of bench/stall.ts ARE (issue 25), not a guess: `npx tsx bench/stall-trace.ts`
// (RA_STALL_PROFILE=1: V8's sampling profiler names the code of each stall). A 1 ms
// sampler records each late turn of the loop with its time and the process's CPU meanwhile; beside it,
// every garbage collection (PerformanceObserver 'gc': its kind and duration) and every child process
// started (how long `spawn` held the loop). The five longest stalls are printed with what overlapped them.
import childProcess from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { constants, PerformanceObserver, performance } from 'node:perf_hooks';
import { threadSched, type ThreadSched } from '../src/extension/diagnostics';

interface Stall {
  /** performance.now() when the late tick ran; the stall is the `lateMs` before it. */
  at: number;
  lateMs: number;
  cpuMs: number;
  /** The main thread's own CPU time meanwhile, and its time waiting for a core (Linux schedstat; NaN elsewhere); the process's CPU counts every thread. */
  mainCpuMs: number;
  mainWaitMs: number;
  /** process.hrtime in microseconds at the tick (the clock of a --cpu-prof profile). */
  hrUs: number;
}

interface Happening {
  at: number;
  ms: number;
  what: string;
}

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};

export class StallTracer {
  private readonly stalls: Stall[] = [];
  private readonly happenings: Happening[] = [];
  private sampler?: NodeJS.Timeout;
  private observer?: PerformanceObserver;
  private restoreSpawn?: () => void;
  private threadsAtStart = new Map<string, number>();

  start(): void {
    this.threadsAtStart = threadsCpuMs();
    this.observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const kind = (entry as { detail?: { kind?: number } }).detail?.kind ?? -1;
        this.happenings.push({ at: entry.startTime, ms: entry.duration, what: `gc ${GC_KINDS[kind] ?? kind}` });
      }
    });
    this.observer.observe({ entryTypes: ['gc'] });
    const original = childProcess.spawn;
    // The service starts git through `spawn` (src/git/run-git.ts); the time it held the loop is the call's.
    (childProcess as { spawn: unknown }).spawn = (...args: unknown[]) => {
      const at = performance.now();
      const child = (original as (...a: unknown[]) => childProcess.ChildProcess)(...args);
      const argv = Array.isArray(args[1]) ? (args[1] as string[]) : [];
      this.happenings.push({
        at,
        ms: performance.now() - at,
        what: `spawn ${String(args[0])} ${argv
          .filter((a) => !a.startsWith('-') && !a.includes('=') && !a.startsWith('/'))
          .slice(0, 2)
          .join(' ')}`,
      });
      return child;
    };
    this.restoreSpawn = () => ((childProcess as { spawn: unknown }).spawn = original);
    let last = performance.now();
    let lastCpu = process.cpuUsage();
    let lastMain = mainThread();
    this.sampler = setInterval(() => {
      const now = performance.now();
      const cpu = process.cpuUsage();
      const main = mainThread();
      const lateMs = now - last - 1;
      if (lateMs > 2) {
        const [s, ns] = process.hrtime();
        this.stalls.push({
          at: now,
          lateMs,
          cpuMs: (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000,
          hrUs: s * 1e6 + ns / 1e3,
          mainCpuMs: main.runMs - lastMain.runMs,
          mainWaitMs: main.waitMs - lastMain.waitMs,
        });
      }
      last = now;
      lastCpu = cpu;
      lastMain = main;
    }, 1);
  }

  /** The `count` longest busy stalls (lateness less the main thread's wait for a core, as LoopMonitor counts), each with the garbage collections and spawns that overlapped it. */
  stop(count = 5, profile?: CpuProfile): string[] {
    clearInterval(this.sampler);
    this.observer?.disconnect();
    this.restoreSpawn?.();
    const code = profile && codeOf(profile);
    const gcs = this.happenings.filter((h) => h.what.startsWith('gc '));
    const threads = [...threadsCpuMs()]
      .map(([name, ms]) => [name, ms - (this.threadsAtStart.get(name) ?? 0)] as const)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([name, ms]) => `${name} ${ms.toFixed(0)}`)
      .join(', ');
    const summary = `CPU ms by thread: ${threads}\n  ${this.stalls.length} ticks over 2 ms late; ${gcs.length} collections (longest ${Math.max(0, ...gcs.map((h) => h.ms)).toFixed(1)} ms), ${this.happenings.length - gcs.length} spawns`;
    return [
      summary,
      ...[...this.stalls]
        .sort((a, b) => busyOf(b) - busyOf(a))
        .slice(0, count)
        .map((stall) => {
          const from = stall.at - stall.lateMs - 1;
          const during = this.happenings
            .filter((h) => h.at + h.ms >= from && h.at <= stall.at)
            .map((h) => `${h.what} ${h.ms.toFixed(1)} ms`)
            .join(', ');
          const sampled = code ? `\n    code: ${code(stall.hrUs - (stall.lateMs + 1) * 1000, stall.hrUs)}` : '';
          return `${stall.lateMs.toFixed(1)} ms late (CPU ${stall.cpuMs.toFixed(1)} ms, main thread ${stall.mainCpuMs.toFixed(1)} ms, waiting for a core ${stall.mainWaitMs.toFixed(1)} ms) at ${(from / 1000).toFixed(2)} s: ${during || 'no gc or spawn'}${sampled}`;
        }),
    ];
  }
}

/** This thread's (the main thread's) accounting; NaN where the system keeps none. */
const mainThread = (): ThreadSched => threadSched() ?? { runMs: NaN, waitMs: NaN };

/** As LoopMonitor: the lateness less the wait for a core; without the accounting, capped by the process's CPU. */
const busyOf = (stall: Stall) => (Number.isNaN(stall.mainWaitMs) ? Math.min(stall.lateMs, stall.cpuMs) : stall.lateMs - stall.mainWaitMs);

/** CPU time of each thread of this process, by its name and id (V8's GC helpers, libuv's pool, worker threads are all `node`), ms. */
function threadsCpuMs(): Map<string, number> {
  const byName = new Map<string, number>();
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const name = tid === String(process.pid) ? 'main' : `${readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()}:${tid}`;
      const ms = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
      byName.set(name, (byName.get(name) ?? 0) + ms);
    }
  } catch {
    // Not Linux, or a thread ended meanwhile: the figures are approximate.
  }
  return byName;
}

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** An inspector session of this process, and its `post` as a promise. */
function inspectorSession(): { session: Session; post: (method: string, params?: object) => Promise<unknown> } {
  const session = new Session();
  session.connect();
  return { session, post: (method, params) => new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result)))) };
}

/** Starts V8's sampling profiler in this process (RA_STALL_PROFILE=1; every `intervalUs`); its samples use the clock of process.hrtime. */
export async function startProfiler(intervalUs = 250): Promise<() => Promise<CpuProfile>> {
  const { post, session } = inspectorSession();
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: intervalUs });
  await post('Profiler.start');
  return async () => {
    const { profile } = (await post('Profiler.stop')) as { profile: CpuProfile };
    session.disconnect();
    return profile;
  };
}

interface AllocationNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocationNode[];
}

/**
 * Starts V8's sampling heap profiler (RA_STALL_ALLOC=1): what allocated the most while it ran, by the
 * function that allocated and the nearest function of the project's own code above it.
 */
export async function startAllocationSampler(): Promise<() => Promise<string>> {
  const { post, session } = inspectorSession();
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  return async () => {
    const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: { head: AllocationNode } };
    session.disconnect();
    const bytes = new Map<string, number>();
    let total = 0;
    const walk = (node: AllocationNode, own: string) => {
      const frame = node.callFrame;
      const name = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-2).join('/')}`;
      const mine = /\/(src|bench)\//.test(frame.url) ? name : own;
      if (node.selfSize > 0) {
        const key = `${name} < ${mine}`;
        bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
        total += node.selfSize;
      }
      for (const child of node.children) walk(child, mine);
    };
    walk(profile.head, '-');
    const top = [...bytes].sort((a, b) => b[1] - a[1]).slice(0, 12);
    return `sampled allocations ${(total / 1e6).toFixed(0)} MB, the most:\n    ${top.map(([name, n]) => `${(n / 1e6).toFixed(1)} MB ${name}`).join('\n    ')}`;
  };
}

/** The functions sampled between two times: the sampled frame and the nearest frame of the project's own code. */
function codeOf(profile: CpuProfile): (fromUs: number, toUs: number) => string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const nameOf = (id: number) => {
    const frame = byId.get(id)!.callFrame;
    return `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-2).join('/')}:${frame.lineNumber + 1}`;
  };
  const ownOf = (id: number | undefined): string => {
    for (; id !== undefined; id = parent.get(id)) if (/\/(src|bench)\//.test(byId.get(id)!.callFrame.url)) return nameOf(id);
    return '-';
  };
  const times: number[] = [];
  let t = profile.startTime;
  for (const delta of profile.timeDeltas) times.push((t += delta));
  return (fromUs, toUs) => {
    const counts = new Map<string, number>();
    profile.samples.forEach((id, i) => {
      if (times[i] < fromUs || times[i] > toUs) return;
      const name = `${nameOf(id)} < ${ownOf(id)}`;
      counts.set(name, (counts.get(name) ?? 0) + 1);
    });
    return [...counts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map(([name, n]) => `${name} x${n}`)
      .join('; ');
  };
}
