// The editor's figures without the editor: the service started in this process as the extension
// starts it, and a 100-message streamed chat against a fake OpenAI server while the extension's own
// responsiveness monitor (src/extension/diagnostics.ts) watches this event loop. The same figures in a
// real VS Code come from the end-to-end suite (test-artifacts/e2e/figures.json).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LoopMonitor } from '../src/extension/diagnostics';
import { Service } from '../src/service';
import { startFakeOpenAI } from '../test/helpers/fake-openai';
import { TestClient } from '../test/helpers/ws-client';

const TOKEN = 'bench-access-token-0123456789abcdef0123';

export async function benchEditor(messages = 100): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-editor-'));
  const fake = await startFakeOpenAI();
  fake.setDefault(() => ({ text: `A reply: ${'a few words of streamed text, '.repeat(8)}end.`, chunks: 20 }));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, provider: 'openai', model: 'fake-model', base_url: fake.url, api_key: 'sk-bench' }));
  const began = performance.now();
  const service = await Service.open({ dataDir: dir, host: '127.0.0.1', port: 0 });
  const { port } = await service.start();
  const startMs = performance.now() - began;
  const client = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TOKEN);
  try {
    let conversation: string | undefined;
    const chat = async (i: number) => {
      const reply = await client.request({ type: 'chat', message: `message ${i}`, stream: true, ...(conversation ? { conversation_id: conversation } : {}) }, 30_000);
      if (reply.status !== 'ok') throw new Error(`chat failed: ${JSON.stringify(reply)}`);
      conversation = (reply.data as { conversation_id: string }).conversation_id;
    };
    // Warm-up (JIT, first statements, the provider's connection), then a fresh conversation measured.
    for (let i = 0; i < 10; i += 1) await chat(i);
    conversation = undefined;
    const monitor = new LoopMonitor();
    monitor.start();
    const t0 = performance.now();
    for (let i = 1; i <= messages; i += 1) await chat(i);
    const totalMs = performance.now() - t0;
    const figures = monitor.stop()!;
    console.log(`service open + listen (the activation's own cost, without VS Code): ${startMs.toFixed(0)} ms (activation goal < 300 ms)`);
    console.log(
      `${messages}-message streamed chat (20 deltas each) in ${(totalMs / 1000).toFixed(1)} s: longest event-loop stall ${figures.longestStallMs} ms ` +
        `(goal < 20 ms; process CPU during it ${figures.longestStallCpuMs} ms), longest busy stall ${figures.longestBusyStallMs} ms, p99 ${figures.p99Ms} ms, mean ${figures.meanMs} ms`,
    );
  } finally {
    client.close();
    await service.stop();
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  }
}
