import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import { describeFigures, LoopMonitor, threadSched, threadSchedReader, type ThreadSched } from '../../src/extension/diagnostics';
import { describeStart } from '../../src/service-thread/start-marks';

/**
 * A thread that spins until it has used `cpuMs` of CPU (its own, from /proc/thread-self/schedstat), while
 * the main thread waits blocked (Atomics.wait: late, but using no CPU), then wakes it.
 */
const SPINNER = `
  const { workerData } = require('node:worker_threads');
  const { readFileSync } = require('node:fs');
  const cpuNs = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
  const flag = new Int32Array(workerData.shared);
  Atomics.wait(flag, 0, 0);
  const start = cpuNs();
  while (cpuNs() - start < workerData.cpuMs * 1e6) {}
  Atomics.store(flag, 1, 1);
  Atomics.notify(flag, 1);
`;

const tick = () => new Promise((resolve) => setTimeout(resolve, 30));

/** The loop's own thread spins `ms` (a real stall the monitor's timer sees). */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('LoopMonitor', () => {
  it(
    'counts a loop blocked by another thread (Atomics.wait: no CPU of its own, not waiting for a core) as busy (Linux)',
    { skip: !existsSync('/proc/thread-self/schedstat') && 'no /proc/thread-self/schedstat' },
    async () => {
      const shared = new SharedArrayBuffer(8);
      const flag = new Int32Array(shared);
      const spinner = new Worker(SPINNER, { eval: true, workerData: { shared, cpuMs: 200 } });
      await new Promise((resolve) => spinner.once('online', resolve));
      const monitor = new LoopMonitor();
      monitor.start();
      // Two sampler ticks, so the stall below lies between two samples.
      await tick();
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
      // Blocked until the other thread has used 200 ms of CPU: the extension host's loop answers nothing meanwhile.
      Atomics.wait(flag, 1, 0);
      await tick();
      const figures = monitor.stop();
      await spinner.terminate();
      assert.ok(figures);
      assert.ok(figures.longestStallMs >= 190, `the stall was seen: ${JSON.stringify(figures)}`);
      assert.ok(figures.longestBusyStallMs >= 150, `a blocked loop is a stall a user feels: ${JSON.stringify(figures)}`);
    },
  );

  it(
    "reads the thread's accounting again from the file it keeps open: fresh figures at each read, this thread's, none once closed (Linux)",
    { skip: !existsSync('/proc/thread-self/schedstat') && 'no /proc/thread-self/schedstat' },
    () => {
      const reader = threadSchedReader();
      const first = reader.read();
      assert.ok(first);
      // This thread computes until a fresh open says it ran 20 ms more (however long a loaded machine takes).
      while (threadSched()!.runMs - first.runMs < 20) spin(1);
      const second = reader.read();
      assert.ok(second);
      assert.ok(second.runMs - first.runMs >= 20, `the kept file read again is fresh: ${JSON.stringify({ first, second })}`);
      assert.ok(second.runMs <= threadSched()!.runMs, "this thread's own figures (a later fresh open reads as much or more)");
      reader.close();
      assert.equal(reader.read(), undefined);
    },
  );

  it("leaves out the time the loop's thread waited for a core, and only that", async () => {
    // The accounting is the test's: the same real 100 ms stall once reported as waiting, once as running.
    for (const waited of [true, false]) {
      let sched: ThreadSched = { runMs: 1, waitMs: 0 };
      const monitor = new LoopMonitor(() => sched);
      monitor.start();
      await tick();
      spin(100);
      sched = waited ? { runMs: 1, waitMs: 100 } : { runMs: 101, waitMs: 0 };
      await tick();
      const figures = monitor.stop();
      assert.ok(figures && figures.longestStallMs >= 90, `the stall was seen: ${JSON.stringify(figures)}`);
      if (waited) assert.ok(figures.longestBusyStallMs < 30, `waiting for a core is not the loop's work: ${JSON.stringify(figures)}`);
      else assert.ok(figures.longestBusyStallMs >= 80, `the loop's own work counts: ${JSON.stringify(figures)}`);
    }
  });

  it("without the thread's accounting (a kernel that keeps none), caps each interval by the process's CPU", async () => {
    const monitor = new LoopMonitor(() => undefined);
    monitor.start();
    await tick();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 150);
    // 60 ms of CPU, however loaded the machine is.
    const cpuAt = process.cpuUsage();
    while (process.cpuUsage(cpuAt).user + process.cpuUsage(cpuAt).system < 60_000);
    await tick();
    const figures = monitor.stop();
    assert.ok(figures && figures.longestStallMs >= 190, `the stall was seen: ${JSON.stringify(figures)}`);
    assert.ok(figures.longestBusyStallMs >= 50 && figures.longestBusyStallMs < 150, `only the 60 ms of CPU count: ${JSON.stringify(figures)}`);
  });

  it("counts the garbage collector's pauses during the measurement (every extension's garbage: the host's one heap)", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const monitor = new LoopMonitor();
    monitor.start();
    await tick();
    gc();
    gc();
    // V8 hands its pause records over after the task that collected.
    await tick();
    const figures = monitor.stop();
    assert.ok(figures && figures.gc.count >= 2, `both full collections were seen: ${JSON.stringify(figures)}`);
    assert.ok(figures.gc.totalMs >= figures.gc.longestMs && figures.gc.longestMs > 0, JSON.stringify(figures));
    assert.match(describeFigures(figures, undefined), new RegExp(`GC pauses ${figures.gc.count}, longest ${figures.gc.longestMs} ms, ${figures.gc.totalMs} ms in all`));
    // A second measurement starts from nothing: the first's pauses are not carried over.
    monitor.start();
    const again = monitor.stop();
    assert.ok(again && again.gc.count < figures.gc.count, JSON.stringify(again));
  });
});

describe('the activation figure', () => {
  it("tells the service thread's start step by step, after the editor asked for the thread", () => {
    const steps = describeStart({ loader: 1_055.4, compiled: 1_100, cached: true, loaded: 1_150.6, begun: 1_160, listening: 1_163 }, 1_000);
    assert.equal(steps, 'thread up +55, compiled +100 (code cache), loaded +151, locked +160, listening +163 ms');
    // A thread started as the extension loaded (early-thread.ts) was up before the hosting asked.
    assert.match(
      describeStart({ loader: 970.2, compiled: 1_020, cached: false, loaded: 1_080, begun: 1_090, listening: 1_092 }, 1_000),
      /^thread up -30, compiled \+20, loaded \+80, locked \+90, listening \+92 ms$/,
    );
    const figures = { seconds: 1, longestStallMs: 1, longestStallCpuMs: 1, longestBusyStallMs: 1, p99Ms: 1, meanMs: 1, gc: { count: 0, totalMs: 0, longestMs: 0 } };
    const text = describeFigures(figures, { ms: 170, fromLoadMs: 260, serviceMs: 165, serviceSteps: steps, readyMs: 700 });
    // What the e2e reads (test/e2e/editor.test.ts, parseFigures).
    assert.match(
      text,
      /^activation 170 ms, 260 ms from the loading of its code \(the service's lock and listen 165 ms of it \[thread up \+55, compiled \+100 \(code cache\), loaded \+151, locked \+160, listening \+163 ms\]; store open at 700 ms\)/,
    );
  });
});
