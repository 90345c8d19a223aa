import { spawn, type ChildProcess } from 'node:child_process';
import { threadSched } from '../src/extension/diagnostics';

/** Spawns a node process and resolves with the port it prints as `listening on ...:PORT`. */
export function spawnListening(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; port: number; stop: () => Promise<void>; output: () => string }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  child.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" from ${args.join(' ')}:\n${out}`)), 20_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const match = /listening on \S*:(\d+)/.exec(out);
      if (!match) return;
      clearTimeout(timer);
      const stop = () =>
        new Promise<void>((done) => {
          if (child.exitCode !== null) return done();
          child.once('exit', () => done());
          child.kill('SIGTERM');
        });
      resolve({ child, port: Number(match[1]), stop, output: () => out });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code}:\n${out}`));
    });
  });
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));

/**
 * This thread's (the bench's main thread's) scheduler accounting so far, ms: time running, time runnable
 * but waiting for a core; NaN where the system keeps none (read as "Measure Responsiveness" reads it).
 */
export function mainThreadSched(): { run: number; wait: number } {
  const sched = threadSched();
  return sched ? { run: sched.runMs, wait: sched.waitMs } : { run: NaN, wait: NaN };
}

/** CPU time of this process's main thread so far (ms); NaN where /proc has no schedstat. */
export function mainThreadCpuMs(): number {
  return mainThreadSched().run;
}
