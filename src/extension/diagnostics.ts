import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

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
   * The longest stall counting only what the loop's own thread spent on the CPU meanwhile (each interval's
   * lateness capped by that CPU time): the part the loop's own work can account for. The thread's CPU where
   * the system tells it (Linux), else the whole process's: there the service's worker threads (history.db,
   * compaction) and waiting for a core count too.
   */
  longestBusyStallMs: number;
  p99Ms: number;
  meanMs: number;
}

// The histogram records each whole timer interval; the stall is what exceeds the resolution.
const stallMs = (ns: number) => Math.max(0, Math.round((ns / 1e6 - RESOLUTION_MS) * 10) / 10);
const round = (ms: number) => Math.round(ms * 10) / 10;

/** The process's CPU time in ms (every thread). */
function processCpuMs(): number {
  const cpu = process.cpuUsage();
  return (cpu.user + cpu.system) / 1000;
}

/**
 * The calling thread's CPU time in ms, from /proc/thread-self/schedstat (its first field: ns on a CPU), or
 * undefined where there is none. Read at each sample (tens of microseconds), only while measuring.
 */
function threadCpuMs(): number | undefined {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ', 1)[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/**
 * "Measure Responsiveness": how long the extension host's event loop (shared with every other
 * extension) is blocked while the assistant works. Started and stopped on demand, so it costs nothing
 * the rest of the time; the figures go to the output channel and a notification, never anything secret.
 */
export class LoopMonitor {
  private histogram: IntervalHistogram | undefined;
  private sampler: NodeJS.Timeout | undefined;
  private startedAt = 0;
  private longest = { wallMs: 0, cpuMs: 0 };
  private longestBusyMs = 0;

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
    // Beside the histogram, which tells how late the loop was, this tells whether it was busy meanwhile.
    const ownCpuMs = threadCpuMs() === undefined ? processCpuMs : () => threadCpuMs() ?? 0;
    let lastWall = performance.now();
    let lastCpu = processCpuMs();
    let lastOwn = ownCpuMs();
    this.sampler = setInterval(() => {
      const wall = performance.now();
      const cpu = processCpuMs();
      const own = ownCpuMs();
      const lateMs = wall - lastWall - RESOLUTION_MS;
      if (lateMs > this.longest.wallMs) this.longest = { wallMs: lateMs, cpuMs: cpu - lastCpu };
      this.longestBusyMs = Math.max(this.longestBusyMs, Math.min(lateMs, own - lastOwn));
      lastWall = wall;
      lastCpu = cpu;
      lastOwn = own;
    }, RESOLUTION_MS);
  }

  /** Stops and returns the figures, or undefined when it was not running. */
  stop(): LoopFigures | undefined {
    const h = this.histogram;
    if (!h) return undefined;
    const longest = this.longest;
    const longestBusyStallMs = round(this.longestBusyMs);
    this.dispose();
    const seconds = Math.round((performance.now() - this.startedAt) / 100) / 10;
    // An empty histogram (stopped before the first tick) reports huge sentinels: no stall was seen.
    if (h.count === 0) return { seconds, longestStallMs: round(longest.wallMs), longestStallCpuMs: round(longest.cpuMs), longestBusyStallMs, p99Ms: 0, meanMs: 0 };
    // The histogram skips its first interval; the sampler sees that one too. The longer of the two counts.
    const longestStallMs = Math.max(stallMs(h.max), round(longest.wallMs));
    return { seconds, longestStallMs, longestStallCpuMs: round(longest.cpuMs), longestBusyStallMs, p99Ms: stallMs(h.percentile(99)), meanMs: stallMs(h.mean) };
  }

  dispose(): void {
    this.histogram?.disable();
    this.histogram = undefined;
    clearInterval(this.sampler);
    this.sampler = undefined;
  }
}

/**
 * activate() -> listening, and the part of it that was the service's own start (Hosting's startupMs:
 * service.json, the lock, the bind); `readyMs`: activate() -> the service whole (its store open), once it is.
 */
export interface Activation {
  ms: number;
  serviceMs?: number;
  readyMs?: number;
}

export function describeFigures(figures: LoopFigures, activation: Activation | undefined): string {
  const ready = activation?.readyMs === undefined ? '' : `; store open at ${activation.readyMs} ms`;
  const service = activation?.serviceMs === undefined ? '' : ` (the service's lock and listen ${activation.serviceMs} ms of it${ready})`;
  const started = activation === undefined ? 'activation: not started automatically' : `activation ${activation.ms} ms${service}`;
  return (
    `${started}; event loop over ${figures.seconds} s: longest stall ${figures.longestStallMs} ms ` +
    `(process CPU during it ${figures.longestStallCpuMs} ms), longest busy stall ${figures.longestBusyStallMs} ms, p99 ${figures.p99Ms} ms, mean ${figures.meanMs} ms`
  );
}
