// Paced clients, shared by the relay benchmarks: each client sends one frame per PACE_MS, under the
// relay's limit of 30 frames a second per client, and its round trips are timed.

export const PACE_MS = 35;
/** The latency a relayed client should stay under at p99. */
export const P99_TARGET_MS = 50;

/** One client of a path: `rt()` is one round trip in milliseconds. */
export interface BenchClient {
  rt(): Promise<number>;
  close(): void;
}

/** Every client sends a paced frame for `durationMs`; returns all round-trip times, sorted. */
export async function paced(clients: BenchClient[], durationMs: number): Promise<number[]> {
  const samples: number[] = [];
  const until = performance.now() + durationMs;
  await Promise.all(
    clients.map(async (client, i) => {
      await new Promise((resolve) => setTimeout(resolve, (i * PACE_MS) / clients.length));
      while (performance.now() < until) {
        const started = performance.now();
        samples.push(await client.rt());
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, PACE_MS - (performance.now() - started))));
      }
    }),
  );
  return samples.sort((a, b) => a - b);
}
