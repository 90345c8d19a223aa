// How much of the user message's commit a turn hides (agent/user-commit.ts): many turns of one
// conversation after a warm-up, with an instant provider and with one that answers after NETWORK_MS
// (a timer standing in for the network). For each turn: its wall time, and the time between the model
// being asked and the user message being durable and told (the commit's part that ran behind the
// request; 0 when the model is asked only after it). One durable write measured in the same run.
// `npx tsx bench/turn-overlap.ts` (TURNS, NETWORK_MS).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CompletionRequest, CompletionResult, Provider } from '../src/agent/providers/types';
import { Service } from '../src/service';
import { instantProvider } from './agent';
import { fmt, percentile } from './util';

async function run(networkMs: number, turns: number): Promise<void> {
  const instant = instantProvider(0);
  let askedAt = 0;
  const provider: Provider = {
    name: 'timed',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      askedAt = performance.now();
      if (networkMs > 0) await new Promise((resolve) => setTimeout(resolve, networkMs));
      return instant.complete(request);
    },
  };
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-overlap-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => provider });
  try {
    let conversationId: string | undefined;
    const walls: number[] = [];
    const hidden: number[] = [];
    const turn = async () => {
      let toldAt = 0;
      const t0 = performance.now();
      const out = await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } }, (e) => {
        if (e.event === 'chat.message' && e.message.role === 'user') toldAt = performance.now();
      });
      conversationId = out.conversation_id;
      walls.push(performance.now() - t0);
      hidden.push(Math.max(0, toldAt - askedAt));
    };
    for (let i = 0; i < 100; i++) await turn();
    walls.length = 0;
    hidden.length = 0;
    for (let i = 0; i < turns; i++) await turn();
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) await service.store.meta.set('bench.baseline', String(i));
    const write = (performance.now() - t0) / 200;
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    walls.sort((a, b) => a - b);
    console.log(
      `provider ${networkMs} ms: turn mean ${fmt(mean(walls))} ms p50 ${fmt(percentile(walls, 50))} ms; ` +
        `commit behind the request ${fmt(mean(hidden))} ms a turn; one durable write ${fmt(write)} ms; ` +
        `(turn - provider) / write ${fmt((mean(walls) - networkMs) / write, 1)}x`,
    );
  } finally {
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const turns = Number(process.env.TURNS ?? 400);
  await run(0, turns);
  await run(Number(process.env.NETWORK_MS ?? 20), Math.ceil(turns / 4));
}

void main();
