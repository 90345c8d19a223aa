import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CompletionRequest, CompletionResult, Provider, ToolCall } from '../src/agent/providers/types';
import { Service } from '../src/service';
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

async function measure(service: Service, conversations: number, durationMs: number): Promise<{ turnsPerSecond: number; p50: number; p99: number; mean: number }> {
  const latencies: number[] = [];
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: conversations }, async () => {
      let conversationId: string | undefined;
      while (performance.now() < deadline) {
        const t0 = performance.now();
        const reply = await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } });
        latencies.push(performance.now() - t0);
        conversationId = reply.conversation_id;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { turnsPerSecond: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), mean: latencies.reduce((a, b) => a + b, 0) / latencies.length };
}

/** One durable write (the journal's fsync) measured in the same run: each acknowledged store of a turn's messages costs one (docs/design.md). */
async function bareDurableWrite(service: Service, samples = 200): Promise<number> {
  const conversation = await service.agent.chat({ message: 'baseline', source: { kind: 'lan' } });
  const t0 = performance.now();
  for (let i = 0; i < samples; i += 1) {
    await service.store.meta.set('bench.baseline', String(i));
  }
  void conversation;
  return (performance.now() - t0) / samples;
}

export async function benchAgent(): Promise<Record<string, number>> {
  const results: Record<string, number> = {};
  for (const toolCalls of [0, 3]) {
    const dir = await mkdtemp(join(tmpdir(), 'ra-bench-agent-'));
    await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
    const service = await Service.open({ dataDir: dir, provider: () => instantProvider(toolCalls) });
    try {
      const floor = await bareDurableWrite(service);
      results[`durable_write_ms`] = floor;
      for (const conversations of [1, 32]) {
        await measure(service, conversations, 300);
        const r = await measure(service, conversations, 3000);
        results[`tools${toolCalls}_c${conversations}_turn_ms`] = r.mean;
        console.log(
          `agent turn, ${toolCalls} tool calls, ${conversations} conversation(s): ${fmt(r.turnsPerSecond, 0)} turns/s, ` +
            `latency mean ${fmt(r.mean)} ms p50 ${fmt(r.p50)} ms p99 ${fmt(r.p99)} ms; ` +
            `mean = ${fmt(r.mean / floor, 1)}x one durable write (${fmt(floor)} ms, same run)`,
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
