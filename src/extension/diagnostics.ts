import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver, type IntervalHistogram } from 'node:perf_hooks';

/** Timer resolution of the event-loop monitor while it runs (it is off otherwise: no idle wakeups). */
const RESOLUTION_MS = 10;

export interface LoopFigures {
  /** How long the measurement ran. */
  seconds: number;
  /** The longest the extension host's event loop was late, beyond the monitor's own timer. */
  longestStallMs: number;
  /**
   * CPU time the process used during that longest stall. Close to the stall: the loop was busy
   * (JavaScript, GC). Far below: the process was waiting for a CPU (other programs were running).
   */
  longestStallCpuMs: number;
  /**
   * The longest stall less the time the loop's own thread waited for a core meanwhile (runnable but not
   * running: other programs, or the service's worker threads, held the cores): the loop's own work,
   * garbage collection and anything that blocked it (a synchronous read, a lock) all count. The thread's
   * wait where the system tells it (Linux /proc/thread-self/schedstat), else each interval's lateness
   * capped by the whole process's CPU time.
   */
  longestBusyStallMs: number;
  p99Ms: number;
  meanMs: number;
  /**
   * V8's garbage-collection pauses of the whole extension host (every extension's garbage, VS Code's too)
   * during the measurement: how many, the longest, and all of them together. A longest busy stall close to
   * the longest pause was a collection.
   */
  gc: { count: number; longestMs: number; totalMs: number };
}

// The histogram records each whole timer interval; the stall is what exceeds the resolution.
const stallMs = (ns: number) => Math.max(0, Math.round((ns / 1e6 - RESOLUTION_MS) * 10) / 10);
const round = (ms: number) => Math.round(ms * 10) / 10;

/** The process's CPU time in ms (every thread). */
function processCpuMs(): number {
  const cpu = process.cpuUsage();
  return (cpu.user + cpu.system) / 1000;
}

/** The calling thread's scheduler accounting in ms: time on a CPU, time runnable but waiting for one. */
export interface ThreadSched {
  runMs: number;
  waitMs: number;
}

/**
 * The calling thread's accounting from /proc/thread-self/schedstat (its first two fields, ns), or undefined
 * where there is none or it is not kept (a kernel without schedstats writes "0 0 0"). Read at each sample
 * (tens of microseconds), only while measuring.
 */
export function threadSched(): ThreadSched | undefined {
  try {
    return schedOf(readFileSync('/proc/thread-self/schedstat', 'latin1'));
  } catch {
    return undefined;
  }
}

function schedOf(text: string): ThreadSched | undefined {
  const [run, wait] = text.split(' ', 2).map(Number);
  if (!Number.isFinite(run) || !Number.isFinite(wait) || run! <= 0) return undefined;
  return { runMs: run! / 1e6, waitMs: wait! / 1e6 };
}

/**
 * threadSched for a sampler that reads it every few ms: the file opened once (by the calling thread: it is
 * that thread's) and read again from its start, not opened and closed each time (a pread of ~7 us against
 * ~50 for readFileSync, measured at load 10). `close` when done.
 */
export function threadSchedReader(): { read(): ThreadSched | undefined; close(): void } {
  let fd: number | undefined;
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return { read: () => undefined, close: () => undefined };
  }
  const buffer = Buffer.alloc(128);
  return {
    read: () => {
      try {
        return fd === undefined ? undefined : schedOf(buffer.toString('latin1', 0, readSync(fd, buffer, 0, buffer.length, 0)));
      } catch {
        return undefined;
      }
    },
    close: () => {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/**
 * "Measure Responsiveness": how long the extension host's event loop (shared with every other
 * extension) is blocked while the assistant works. Started and stopped on demand, so it costs nothing
 * the rest of the time; the figures go to the output channel and a notification, never anything secret.
 */
export class LoopMonitor {
  /** `sched`: the loop thread's accounting (tests give their own; by default the thread's file, kept open while measuring). */
  constructor(private readonly given?: () => ThreadSched | undefined) {}

  private reader: { read(): ThreadSched | undefined; close(): void } | undefined;

  private histogram: IntervalHistogram | undefined;
  private sampler: NodeJS.Timeout | undefined;
  private startedAt = 0;
  private longest = { wallMs: 0, cpuMs: 0 };
  private longestBusyMs = 0;
  private gcObserver: PerformanceObserver | undefined;
  private gc = { count: 0, longestMs: 0, totalMs: 0 };

  get running(): boolean {
    return this.histogram !== undefined;
  }

  start(): void {
    this.dispose();
    this.histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.histogram.enable();
    this.startedAt = performance.now();
    this.longest = { wallMs: 0, cpuMs: 0 };
    this.longestBusyMs = 0;
    this.gc = { count: 0, longestMs: 0, totalMs: 0 };
    this.gcObserver = new PerformanceObserver((list) => this.countGc(list.getEntries()));
    this.gcObserver.observe({ entryTypes: ['gc'] });
    // Beside the histogram, which tells how late the loop was, this tells whether it was busy meanwhile.
    let lastWall = performance.now();
    let lastCpu = processCpuMs();
    const reader = this.given ? undefined : (this.reader = threadSchedReader());
    const sched = this.given ?? (() => reader?.read());
    let lastSched = sched();
    this.sampler = setInterval(() => {
      const wall = performance.now();
      const cpu = processCpuMs();
      const now = sched();
      const lateMs = wall - lastWall - RESOLUTION_MS;
      if (lateMs > this.longest.wallMs) this.longest = { wallMs: lateMs, cpuMs: cpu - lastCpu };
      // Without the thread's accounting at both ends (none kept, or a read that failed): the process's CPU caps it.
      const busyMs = now && lastSched ? lateMs - (now.waitMs - lastSched.waitMs) : Math.min(lateMs, cpu - lastCpu);
      this.longestBusyMs = Math.max(this.longestBusyMs, busyMs);
      lastWall = wall;
      lastCpu = cpu;
      lastSched = now;
    }, RESOLUTION_MS);
  }

  /** Stops and returns the figures, or undefined when it was not running. */
  stop(): LoopFigures | undefined {
    const h = this.histogram;
    if (!h) return undefined;
    const longest = this.longest;
    const longestBusyStallMs = round(this.longestBusyMs);
    // Entries not yet delivered to the callback (it runs after the loop's current task).
    this.countGc(this.gcObserver?.takeRecords() ?? []);
    const gc = { count: this.gc.count, longestMs: round(this.gc.longestMs), totalMs: round(this.gc.totalMs) };
    this.dispose();
    const seconds = Math.round((performance.now() - this.startedAt) / 100) / 10;
    // An empty histogram (stopped before the first tick) reports huge sentinels: no stall was seen.
    if (h.count === 0) return { seconds, longestStallMs: round(longest.wallMs), longestStallCpuMs: round(longest.cpuMs), longestBusyStallMs, p99Ms: 0, meanMs: 0, gc };
    // The histogram skips its first interval; the sampler sees that one too. The longer of the two counts.
    const longestStallMs = Math.max(stallMs(h.max), round(longest.wallMs));
    return { seconds, longestStallMs, longestStallCpuMs: round(longest.cpuMs), longestBusyStallMs, p99Ms: stallMs(h.percentile(99)), meanMs: stallMs(h.mean), gc };
  }

  private countGc(entries: readonly PerformanceEntry[]): void {
    for (const entry of entries) {
      this.gc.count += 1;
      this.gc.longestMs = Math.max(this.gc.longestMs, entry.duration);
      this.gc.totalMs += entry.duration;
    }
  }

  dispose(): void {
    this.histogram?.disable();
    this.histogram = undefined;
    clearInterval(this.sampler);
    this.sampler = undefined;
    this.gcObserver?.disconnect();
    this.gcObserver = undefined;
    this.reader?.close();
    this.reader = undefined;
  }
}

/**
 * activate() -> listening, and the part of it that was the service's own start (Hosting's startupMs:
 * service.json, the lock, the bind); `readyMs`: activate() -> the service whole (its store open), once it is.
 */
export interface Activation {
  ms: number;
  /** The extension's code began loading (before activate()) -> listening: the thread starts at that load. */
  fromLoadMs?: number;
  serviceMs?: number;
  readyMs?: number;
  /** The service thread's start, step by step (start-marks.ts's describeStart). */
  serviceSteps?: string;
}

/**
 * `serviceLoop`: the service thread's own loop over the same measurement (the loop that answers the sockets:
 * the phone, other windows, webhooks), told apart from the extension host's.
 */
export function describeFigures(figures: LoopFigures, activation: Activation | undefined, serviceLoop?: LoopFigures): string {
  const ready = activation?.readyMs === undefined ? '' : `; store open at ${activation.readyMs} ms`;
  const steps = activation?.serviceSteps === undefined ? '' : ` [${activation.serviceSteps}]`;
  const service = activation?.serviceMs === undefined ? '' : ` (the service's lock and listen ${activation.serviceMs} ms of it${steps}${ready})`;
  const fromLoad = activation?.fromLoadMs === undefined ? '' : `, ${activation.fromLoadMs} ms from the loading of its code`;
  const started = activation === undefined ? 'activation: not started automatically' : `activation ${activation.ms} ms${fromLoad}${service}`;
  return (
    `${started}; event loop over ${figures.seconds} s: longest stall ${figures.longestStallMs} ms ` +
    `(process CPU during it ${figures.longestStallCpuMs} ms), longest busy stall ${figures.longestBusyStallMs} ms, p99 ${figures.p99Ms} ms, mean ${figures.meanMs} ms; ` +
    `GC pauses ${figures.gc.count}, longest ${figures.gc.longestMs} ms, ${figures.gc.totalMs} ms in all` +
    (serviceLoop
      ? `; the service thread's own loop over ${serviceLoop.seconds} s: busy stall ${serviceLoop.longestBusyStallMs} ms (stall ${serviceLoop.longestStallMs} ms), ` +
        `p99 ${serviceLoop.p99Ms} ms, its GC ${serviceLoop.gc.count} pauses, longest ${serviceLoop.gc.longestMs} ms, ${serviceLoop.gc.totalMs} ms in all`
      : '')
  );
}
