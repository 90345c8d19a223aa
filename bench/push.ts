// `npm run bench -- push`: how long a waiting prompt takes to reach a phone by Web Push, beside how long
// it takes to reach a connected socket, in one run: from the moment the provider hands the agent a tool
// call (ask mode) to the push request arriving at a fake push service (VAPID signed, aes128gcm
// encrypted, over HTTPS on loopback) and to the `permission.request` frame on a WebSocket client.
import https from 'node:https';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CompletionRequest, CompletionResult, Provider } from '../src/agent/providers/types';
import { Service } from '../src/service';
import { startFakePushService } from '../test/helpers/fake-push-service';
import { TestClient } from '../test/helpers/ws-client';
import { fmt, percentile } from './util';

const TOKEN = 'bench-access-token-0123456789abcdef-XYZ';
const PROMPTS = 200;

/** Asks for list_directory once per user message, noting when it handed over the call; then answers. */
function toolCallingProvider(onToolCall: () => void): Provider {
  return {
    name: 'tool-calling',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      // The turn's note (`moment`) comes last in every request: the step's own last message is before it.
      const last = request.messages.filter((m) => !(m.role === 'user' && m.moment === true)).at(-1);
      if (last?.role === 'user') {
        onToolCall();
        return { text: '', tool_calls: [{ id: 'call-1', name: 'list_directory', arguments: {} }], finish_reason: 'tool_calls' };
      }
      return { text: 'done', tool_calls: [], finish_reason: 'stop' };
    },
  };
}

export async function benchPush(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-push-'));
  const push = await startFakePushService();
  let toolCallAt = 0;
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, permission_mode: 'ask', workspace: dir }));
  const service = await Service.open({
    dataDir: dir,
    host: '127.0.0.1',
    port: 0,
    provider: () => toolCallingProvider(() => (toolCallAt = performance.now())),
    push: { allowPrivateEndpoints: true, agent: new https.Agent({ ca: push.ca, keepAlive: true }) },
  });
  const { port } = await service.start();
  const client = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TOKEN);
  try {
    const subscribed = await client.request({ type: 'push_subscribe', device_id: 'bench-phone', device_name: 'bench', subscription: push.subscription() });
    if (subscribed.status !== 'ok') throw new Error(JSON.stringify(subscribed));
    const toSocket: number[] = [];
    const toPush: number[] = [];
    for (let i = 0; i < PROMPTS + 20; i++) {
      const pushesBefore = push.received.length;
      client.send({ type: 'chat', message: `prompt ${i}`, id: `b${i}` });
      const request = await client.next((f) => f.event === 'permission.request');
      const socketAt = performance.now();
      await push.waitFor((p) => p.received.length > pushesBefore && p.received.some((r, k) => k >= pushesBefore && r.payload?.request_id === request.request_id), 'the prompt push');
      const pushAt = push.received.find((r) => r.payload?.request_id === request.request_id && r.payload?.kind === 'prompt')!.receivedAt;
      const started = toolCallAt;
      await client.request({ type: 'permission_response', request_id: request.request_id, decision: 'deny' });
      await client.next((f) => f.id === `b${i}` && 'status' in f);
      // The withdrawal and the finished push go out before the next prompt is timed.
      await push.waitFor((p) => p.received.length >= pushesBefore + 3, 'resolved and finished pushes');
      if (i < 20) continue; // warm-up: connections, JIT
      toSocket.push(socketAt - started);
      toPush.push(pushAt - started);
    }
    toSocket.sort((a, b) => a - b);
    toPush.sort((a, b) => a - b);
    const socket50 = percentile(toSocket, 50);
    const socket99 = percentile(toSocket, 99);
    const push50 = percentile(toPush, 50);
    const push99 = percentile(toPush, 99);
    console.log(
      `tool call -> permission.request on a socket: p50 ${fmt(socket50)} ms p99 ${fmt(socket99)} ms (${PROMPTS} prompts)\n` +
        `tool call -> push at the push service:      p50 ${fmt(push50)} ms p99 ${fmt(push99)} ms; ` +
        `${fmt(push50 / socket50, 1)}x the socket at p50, ${fmt(push99 / socket99, 1)}x at p99 (same run)`,
    );
    return { socket_p50_ms: socket50, socket_p99_ms: socket99, push_p50_ms: push50, push_p99_ms: push99 };
  } finally {
    client.close();
    await service.stop();
    await push.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) void benchPush();
