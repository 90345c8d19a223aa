// What the longest chat turns during a one-address login burst ARE (issue 25): `npx tsx bench/auth-trace.ts`
// (RA_STALL_PROFILE=1 adds V8's sampling profiler, naming the code of each stall). The service and the
// attacker of bench/auth.ts; each burst (POST /auth, then WebSocket, ROUNDS times) runs beside the chat
// with bench/stall-trace.ts's sampler, and the longest late ticks are printed with the garbage
// collections that overlapped them and, profiled, the code that ran.
import { rm } from 'node:fs/promises';
import { Attacker, openBenchService, turnsWhile } from './auth';
import { startProfiler, StallTracer } from './stall-trace';
import { fmt } from './util';

const ROUNDS = Number(process.env.RA_TRACE_ROUNDS ?? 3);

async function main(): Promise<void> {
  const { dir, service } = await openBenchService();
  const attacker = await Attacker.start();
  try {
    const { port } = await service.start();
    await turnsWhile(service, new Promise((resolve) => setTimeout(resolve, 300)));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const path of ['/auth', '/ws']) {
        const tracer = new StallTracer();
        const profiler = process.env.RA_STALL_PROFILE ? await startProfiler() : undefined;
        tracer.start();
        const attack = attacker.fire(port, path, false);
        const period = await turnsWhile(service, attack);
        const burst = await attack;
        const profile = await profiler?.();
        const longest = [...period.turns].sort((a, b) => b - a).slice(0, 3);
        console.log(
          `round ${round + 1} ${path}: ${period.turns.length} turns, longest ${longest.map((t) => fmt(t)).join(' / ')} ms; burst ${fmt(burst.burstMs, 0)} ms ${JSON.stringify(burst.counts)}`,
        );
        for (const line of tracer.stop(4, profile)) console.log(`  ${line}`);
      }
    }
  } finally {
    attacker.stop();
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
