// What one request to an OpenAI-compatible server costs the service's main thread through the provider
// (the openai SDK inside createOpenAIProvider: request building, headers, fetch/undici, the answer's JSON
// or SSE parsing, our retry watchdog), beside a bare fetch and a bare node:http request of the same body
// to the same server. The server runs on a worker thread (its CPU is not the main thread's) and answers
// at once with a one-word reply. The ways take turns in blocks, in one process, so the machine's load
// falls on all alike; printed per way: the median over blocks of the main thread's CPU a request (its
// schedstat) and of the wall time a request. `npx tsx bench/provider-request.ts` (BLOCKS, CALLS a
// block, HISTORY: user/assistant pairs before the last user message, default 20; ONLY: one way alone).
import { request as httpRequest, Agent as HttpAgent } from 'node:http';
import { Worker } from 'node:worker_threads';
import { createOpenAIProvider } from '../src/agent/providers/openai';
import type { ChatMessage } from '../src/agent/providers/types';
import { fmt, mainThreadCpuMs } from './util';

/** The fake server: JSON for a plain request, SSE (role, one content piece, finish, usage) for a streamed one. */
const SERVER = `
const { createServer } = require('node:http');
const { parentPort } = require('node:worker_threads');
const usage = { prompt_tokens: 100, completion_tokens: 1, total_tokens: 101 };
const base = { id: 'chatcmpl-1', created: 1, model: 'bench-model' };
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (!body.stream) {
      const text = JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }], usage });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      return res.end(text);
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = (choices, extra = {}) => 'data: ' + JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...extra }) + '\\n\\n';
    res.end(
      event([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]) +
        event([{ index: 0, delta: { content: 'done' }, finish_reason: null }]) +
        event([{ index: 0, delta: {}, finish_reason: 'stop' }]) +
        event([], { usage }) +
        'data: [DONE]\\n\\n',
    );
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

function history(pairs: number): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: 'You are a bench.' }];
  for (let i = 0; i < pairs; i += 1) messages.push({ role: 'user', content: `question ${i}` }, { role: 'assistant', content: `answer ${i}` });
  messages.push({ role: 'user', content: 'bench turn' });
  return messages;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const blocks = Number(process.env.BLOCKS ?? 20);
  const calls = Number(process.env.CALLS ?? 100);
  const messages = history(Number(process.env.HISTORY ?? 20));
  const worker = new Worker(SERVER, { eval: true });
  const port = await new Promise<number>((resolve) => worker.once('message', resolve));
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  const url = `${baseUrl}/chat/completions`;
  const provider = createOpenAIProvider({ baseUrl, apiKey: 'bench-key' });
  // What the SDK sends for these messages (plain strings: the same JSON a bare request would send).
  const body = () => JSON.stringify({ model: 'bench-model', messages: messages.map(({ role, content }) => ({ role, content })), max_tokens: 100 });
  const headers = { 'content-type': 'application/json', accept: 'application/json', authorization: 'Bearer bench-key' };
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  const ways: Record<string, () => Promise<unknown>> = {
    'provider (SDK), plain': () => provider.complete({ model: 'bench-model', messages, max_tokens: 100 }),
    'provider (SDK), streamed': () => provider.complete({ model: 'bench-model', messages, max_tokens: 100, onDelta: () => undefined }),
    'bare fetch, plain': async () => (await fetch(url, { method: 'POST', headers, body: body() })).json(),
    'bare node:http, plain': () =>
      new Promise((resolve, reject) => {
        const text = body();
        const req = httpRequest(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(text) } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(text);
      }),
  };
  // ONLY=<a way's name, or its start>: that way alone (e.g. under --cpu-prof).
  const only = process.env.ONLY;
  if (only) for (const name of Object.keys(ways)) if (!name.startsWith(only)) delete ways[name];
  const cpu: Record<string, number[]> = {};
  const wall: Record<string, number[]> = {};
  try {
    for (const way of Object.values(ways)) for (let i = 0; i < 50; i += 1) await way();
    const names = Object.keys(ways);
    for (let b = 0; b < blocks; b += 1) {
      // Each block in another order: no way always follows the same one.
      for (const name of b % 2 === 0 ? names : [...names].reverse()) {
        const c0 = mainThreadCpuMs();
        const t0 = performance.now();
        for (let i = 0; i < calls; i += 1) await ways[name]();
        (wall[name] ??= []).push(((performance.now() - t0) / calls) * 1000);
        (cpu[name] ??= []).push(((mainThreadCpuMs() - c0) / calls) * 1000);
      }
    }
    console.log(`${messages.length} messages a request; ${blocks} blocks of ${calls} requests a way; medians of the blocks:`);
    for (const name of names) console.log(`  ${name.padEnd(28)} main thread CPU ${fmt(median(cpu[name]), 0).padStart(5)} us, wall ${fmt(median(wall[name]), 0).padStart(5)} us a request`);
  } finally {
    agent.destroy();
    await worker.terminate();
  }
}

void main();
