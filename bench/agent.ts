import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CompletionRequest, CompletionResult, Provider, ToolCall } from '../src/agent/providers/types';
import type { Service } from '../src/service';
import { runsBundle, serviceClass } from './bundled';
import { fmt, percentile } from './util';

const recall = (i: number): ToolCall => ({ id: `call-${i}`, name: 'recall', arguments: { query: 'bench' } });

/**
 * An instant provider: answers at once, first with `toolCalls` tool calls, one a step (`callOf`; by
 * default `recall`, a tool that only reads the database), then with text. Everything measured is
 * therefore the agent's own work.
 */
export function instantProvider(toolCalls: number, callOf: (i: number) => ToolCall = recall): Provider {
  return {
    name: 'instant',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      // The user's message, not the turn's note (`moment`) that ends every request.
      const lastUser = request.messages.findLastIndex((m) => m.role === 'user' && m.moment !== true);
      const toolResults = request.messages.slice(lastUser).filter((m) => m.role === 'tool').length;
      if (toolResults < toolCalls) {
        return { text: '', tool_calls: [callOf(toolResults)], finish_reason: 'tool_calls' };
      }
      request.onDelta?.('done');
      return { text: 'done', tool_calls: [], finish_reason: 'stop' };
    },
  };
}

interface Sample {
  turnsPerSecond: number;
  p50: number;
  p99: number;
  mean: number;
  /** One durable write (the journal's fsync), measured in slices between the turns' slices. */
  write: { mean: number; p50: number };
}

const SLICES = 20;
const TURN_SLICE_MS = 150;
const WRITE_SLICE_MS = 40;
/** Longer than the history store's group window (GROUP_MS, 250 ms). */
const SETTLE_MS = 300;

/** Turns of `conversations` conversations at once until `deadline`, each latency into `latencies`. */
async function turnsUntil(service: Service, conversations: (string | undefined)[], deadline: number, latencies: number[]): Promise<void> {
  await Promise.all(
    conversations.map(async (_, i) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        const reply = await service.agent.chat({ message: 'bench turn', conversationId: conversations[i], source: { kind: 'lan' } });
        latencies.push(performance.now() - t0);
        conversations[i] = reply.conversation_id;
      }
    }),
  );
}

/**
 * One durable write (the journal's fsync): each acknowledged store of a turn's messages costs one
 * (docs/design.md). Measured by the store's own smallest durable write, one after another until `deadline`.
 */
async function writesUntil(service: Service, deadline: number, latencies: number[]): Promise<void> {
  while (performance.now() < deadline) {
    const t0 = performance.now();
    await service.store.meta.set('bench.baseline', String(latencies.length));
    latencies.push(performance.now() - t0);
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * The turns and their baseline in the same minutes: `SLICES` slices of turns, each followed by a slice of
 * bare durable writes, so that the disk's and the machine's swings (a durable write measured alone once
 * moved 0.39-0.84 ms from run to run) fall on both sides of the ratio alike.
 */
async function measure(service: Service, conversations: number, slices = SLICES): Promise<Sample> {
  const ids: (string | undefined)[] = Array.from({ length: conversations }, () => undefined);
  const turns: number[] = [];
  const writes: number[] = [];
  let turnMs = 0;
  for (let slice = 0; slice < slices; slice += 1) {
    const started = performance.now();
    await turnsUntil(service, ids, started + TURN_SLICE_MS, turns);
    turnMs += performance.now() - started;
    // A pause counted on neither side: the turns' own background work (the history worker's grouped puts,
    // every GROUP_MS; the disk's writeback of what they wrote) is theirs, not the bare write's.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    await writesUntil(service, performance.now() + WRITE_SLICE_MS, writes);
  }
  turns.sort((a, b) => a - b);
  writes.sort((a, b) => a - b);
  return {
    turnsPerSecond: turns.length / (turnMs / 1000),
    p50: percentile(turns, 50),
    p99: percentile(turns, 99),
    mean: mean(turns),
    write: { mean: mean(writes), p50: percentile(writes, 50) },
  };
}

export async function benchAgent(): Promise<Record<string, number>> {
  const results: Record<string, number> = {};
  const Service = serviceClass();
  for (const toolCalls of [0, 3]) {
    const dir = await mkdtemp(join(tmpdir(), 'ra-bench-agent-'));
    await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
    const service = await Service.open({ dataDir: dir, provider: () => instantProvider(toolCalls) });
    try {
      // The baseline as it was measured before s14 (printed beside): one chat, then 200 writes before any turn.
      await service.agent.chat({ message: 'baseline', source: { kind: 'lan' } });
      const block: number[] = [];
      for (let i = 0; i < 200; i += 1) {
        const t0 = performance.now();
        await service.store.meta.set('bench.baseline', String(i));
        block.push(performance.now() - t0);
      }
      for (const conversations of [1, 32]) {
        await measure(service, conversations, 2);
        const r = await measure(service, conversations);
        results[`tools${toolCalls}_c${conversations}_turn_ms`] = r.mean;
        results[`tools${toolCalls}_c${conversations}_durable_write_ms`] = r.write.mean;
        console.log(
          `agent turn, ${toolCalls} tool calls, ${conversations} conversation(s): ${fmt(r.turnsPerSecond, 0)} turns/s, ` +
            `latency mean ${fmt(r.mean)} ms p50 ${fmt(r.p50)} ms p99 ${fmt(r.p99)} ms; ` +
            `mean = ${fmt(r.mean / r.write.mean, 2)}x one durable write (mean ${fmt(r.write.mean)} ms, p50 ${fmt(r.write.p50)} ms; ` +
            `${SLICES} slices alternating with the turns', each after a ${SETTLE_MS} ms pause), p50 = ${fmt(r.p50 / r.write.p50, 2)}x the write's p50; ` +
            `against one block of writes before the turns (the method before s14): ${fmt(r.mean / mean(block), 2)}x (${fmt(mean(block))} ms); ` +
            (runsBundle ? 'the service built by esbuild (dist/bench-service.js)' : 'src through tsx (BENCH_SOURCE=1)'),
        );
      }
    } finally {
      await service.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }
  return results;
}

if (require.main === module) void benchAgent();
