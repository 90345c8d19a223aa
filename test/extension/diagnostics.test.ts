import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { LoopMonitor } from '../../src/extension/diagnostics';

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

describe('LoopMonitor', () => {
  it("counts in the busy stall only the loop's own thread's CPU, not another thread's (Linux)", { skip: !existsSync('/proc/thread-self/schedstat') && 'no /proc/thread-self/schedstat' }, async () => {
    const shared = new SharedArrayBuffer(8);
    const flag = new Int32Array(shared);
    const spinner = new Worker(SPINNER, { eval: true, workerData: { shared, cpuMs: 200 } });
    await new Promise((resolve) => spinner.once('online', resolve));
    const monitor = new LoopMonitor();
    monitor.start();
    // Two sampler ticks, so the stall below lies between two samples.
    await new Promise((resolve) => setTimeout(resolve, 30));
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    // Blocked (no CPU of this thread) until the other thread has used 200 ms of CPU: a stall of at least
    // 200 ms whose process CPU is at least 200 ms, all of it the other thread's.
    Atomics.wait(flag, 1, 0);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const figures = monitor.stop();
    await spinner.terminate();
    assert.ok(figures);
    assert.ok(figures.longestStallMs >= 190, `the stall was seen: ${JSON.stringify(figures)}`);
    assert.ok(figures.longestBusyStallMs < 100, `the other thread's CPU is not this loop's work: ${JSON.stringify(figures)}`);
  });
});
