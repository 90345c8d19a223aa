// Interleaved A/B of deleting one big conversation (s31, retain31): how long the delete's own call takes,
// the longest the event loop was held from the delete until the maintenance pass it kicked has freed the
// space, and how long that freeing took. Each run is a fresh child opening a fresh store with that
// checkout's code (a conversation of MESSAGES messages, all in sql.js: the default hot budget is 20,000):
//   tsx bench/delete-stall-ab.ts <checkout A> <checkout B> [rounds, default 3] [messages, default 20000]
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';

interface Figures {
  deleteMs: number;
  stallMs: number;
  freedMs: number;
}

async function child(root: string, messages: number): Promise<void> {
  const { openStore } = (await import(path.join(root, 'src/store/index'))) as typeof import('../src/store/index');
  const dir = await mkdtemp(path.join(tmpdir(), 'delete-stall-'));
  const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
  await store.conversations.create({ id: 'big', title: 'big', source: 'ws', created_at: new Date(0).toISOString() });
  for (let i = 0; i < messages; i += 500) {
    const batch = Array.from({ length: Math.min(500, messages - i) }, (_, k) => ({
      id: `m${i + k}`,
      conversation_id: 'big',
      role: 'user' as const,
      content: `message ${i + k} ${'x'.repeat(100)}`,
      timestamp: new Date(i + k).toISOString(),
    }));
    await store.messages.appendMany(batch);
  }
  await store.maintenance.run();
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 1);
  const t0 = performance.now();
  await store.conversations.delete('big');
  const t1 = performance.now();
  await store.maintenance.run();
  const t2 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 20));
  clearInterval(timer);
  await store.close();
  await rm(dir, { recursive: true, force: true });
  const figures: Figures = { deleteMs: t1 - t0, stallMs, freedMs: t2 - t1 };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

function main(): void {
  const [rootA, rootB, roundsArg, messagesArg] = process.argv.slice(2);
  if (!rootA || !rootB) throw new Error('usage: tsx bench/delete-stall-ab.ts <checkout A> <checkout B> [rounds] [messages]');
  const rounds = Number(roundsArg ?? 3);
  const messages = Number(messagesArg ?? 20_000);
  const sides = { A: { root: rootA, runs: [] as Figures[] }, B: { root: rootB, runs: [] as Figures[] } };
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) {
      const side = sides[name];
      const run = spawnSync(process.execPath, [...process.execArgv, __filename, 'child', side.root, String(messages)], { encoding: 'utf8', env: { ...process.env, NODE_ENV: 'test' } });
      if (run.status !== 0) throw new Error(`child failed: ${run.stderr}`);
      const figures = JSON.parse(run.stdout.trim().split('\n').pop()!) as Figures;
      side.runs.push(figures);
      console.log(
        `round ${round + 1} ${name}: delete ${figures.deleteMs.toFixed(1)} ms, longest stall ${figures.stallMs.toFixed(1)} ms, freed in ${figures.freedMs.toFixed(0)} ms, load ${loadavg()[0].toFixed(1)}`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [name, side] of Object.entries(sides)) {
    const m = (key: keyof Figures) => median(side.runs.map((r) => r[key])).toFixed(1);
    console.log(`${name} (${side.root}): median delete ${m('deleteMs')} ms, longest stall ${m('stallMs')} ms, freed in ${m('freedMs')} ms`);
  }
}

if (process.argv[2] === 'child') void child(process.argv[3], Number(process.argv[4]));
else main();
