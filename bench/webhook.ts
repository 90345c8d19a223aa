// Webhook benchmark: incoming POST -> 202 -> agent (instant stub provider) -> callback received by a
// local receiver, at 1 and 32 concurrent senders. Baseline: a bare Node HTTP server answering the same
// POSTs from the same client in the same run; the ratio is round trips per second against its requests
// per second. The service runs in a child process (this file with --serve), so the load generator and
// receiver here do not share its event loop.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, percentile, spawnListening } from './util';

const TOKEN = 'bench-access-token-0123456789abcdef0123';
const SECRET = 'bench-webhook-secret-0123456789';
const WARMUP_MS = 500;
const MEASURE_MS = 3_000;
const CONCURRENCY = [1, 32];

const BARE_SERVER = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const body = JSON.stringify({ status: 'ok', data: { conversation_id: 'c', message_id: 'm' } });
    res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(0, '127.0.0.1', () => console.log('listening on 127.0.0.1:' + server.address().port));
`;

interface Reply {
  status: number;
  body: string;
}

function post(agent: http.Agent, port: number, path: string, body: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  count: number;
}

/**
 * `senders` loops, each doing one operation after the other; counts those that complete inside the
 * measured window (after a warm-up) and their latencies.
 */
async function load(senders: number, operation: (sender: number, i: number) => Promise<void>): Promise<Run> {
  const latencies: number[] = [];
  let measuring = false;
  let running = true;
  const loops = Array.from({ length: senders }, async (_, sender) => {
    for (let i = 0; running; i += 1) {
      const started = performance.now();
      await operation(sender, i);
      if (measuring) latencies.push(performance.now() - started);
    }
  });
  await new Promise((resolve) => setTimeout(resolve, WARMUP_MS));
  measuring = true;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, MEASURE_MS));
  measuring = false;
  const elapsed = (performance.now() - started) / 1000;
  running = false;
  await Promise.all(loops);
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), count: latencies.length };
}

/** Receives callbacks; resolves the waiter of each conversation_id. */
async function startReceiver() {
  const waiters = new Map<string, () => void>();
  const early = new Set<string>();
  let received = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received += 1;
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      const { conversation_id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { conversation_id: string };
      const waiter = waiters.get(conversation_id);
      if (waiter) {
        waiters.delete(conversation_id);
        waiter();
      } else early.add(conversation_id);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    received: () => received,
    /** Resolves when the callback of `conversationId` arrives (or has arrived). */
    callback(conversationId: string, timeoutMs = 30_000): Promise<void> {
      if (early.delete(conversationId)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no callback for ${conversationId}`)), timeoutMs);
        waiters.set(conversationId, () => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())).then(() => undefined),
  };
}

/** Child mode: the real service with an instant provider stub and no per-account rate limit. */
async function serveChild(dataDir: string): Promise<void> {
  const { Service } = await import('../src/service');
  const service = await Service.open({
    dataDir,
    host: '127.0.0.1',
    port: 0,
    provider: () => ({ name: 'bench', complete: async () => ({ text: 'instant reply', tool_calls: [], finish_reason: 'stop' }) }),
    webhook: { rateLimitPerMinute: Number.MAX_SAFE_INTEGER },
  });
  const { port } = await service.start();
  console.log(`listening on 127.0.0.1:${port}`);
  await new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
  await service.stop();
  process.exit(0);
}

export async function benchWebhook(): Promise<Record<string, number>> {
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-webhook-'));
  const receiver = await startReceiver();
  await writeFile(
    join(dir, 'service.json'),
    JSON.stringify({
      auth_token: TOKEN,
      permission_mode: 'deny',
      channels: { webhook: { accounts: { bench: { incoming_path: '/hook', outgoing_url: `http://127.0.0.1:${receiver.port}/callback`, secret: SECRET } } } },
    }),
  );
  const bare = await spawnListening(['-e', BARE_SERVER]);
  const service = await spawnListening([...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROFILE] : []), '--import', 'tsx', __filename, '--serve', dir]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const results: Record<string, number> = {};
  try {
    for (const senders of CONCURRENCY) {
      const payload = JSON.stringify({ message: 'ping from the benchmark' });
      const baseline = await load(senders, async () => {
        const reply = await post(agent, bare.port, '/hook', payload);
        if (reply.status !== 202) throw new Error(`bare server answered ${reply.status}`);
      });
      const accepts: number[] = [];
      const webhook = await load(senders, async (sender, i) => {
        const t0 = performance.now();
        const reply = await post(agent, service.port, '/hook', JSON.stringify({ message: `ping ${sender}-${i}`, user_id: `sender-${sender}` }), { 'x-service-secret': SECRET });
        if (reply.status !== 202) throw new Error(`service answered ${reply.status}: ${reply.body}`);
        accepts.push(performance.now() - t0);
        await receiver.callback((JSON.parse(reply.body) as { data: { conversation_id: string } }).data.conversation_id);
      });
      accepts.sort((a, b) => a - b);
      const ratio = webhook.rps / baseline.rps;
      Object.assign(results, {
        [`bare_rps_${senders}`]: baseline.rps,
        [`webhook_rps_${senders}`]: webhook.rps,
        [`webhook_p50_ms_${senders}`]: webhook.p50,
        [`webhook_p99_ms_${senders}`]: webhook.p99,
        [`accept_p50_ms_${senders}`]: percentile(accepts, 50),
        [`accept_p99_ms_${senders}`]: percentile(accepts, 99),
        [`ratio_${senders}`]: ratio,
      });
      console.log(
        `${senders} sender(s): webhook -> callback ${fmt(webhook.rps, 0)}/s (p50 ${fmt(webhook.p50, 1)} ms, p99 ${fmt(webhook.p99, 1)} ms; ` +
          `202 p50 ${fmt(percentile(accepts, 50), 1)} ms, p99 ${fmt(percentile(accepts, 99), 1)} ms); ` +
          `bare HTTP ${fmt(baseline.rps, 0)}/s (p50 ${fmt(baseline.p50, 2)} ms); ratio ${fmt(ratio, 3)}`,
      );
    }
  } finally {
    agent.destroy();
    await bare.stop();
    await service.stop();
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  }
  console.log(`(webhook bench took ${fmt((Date.now() - started) / 1000, 1)} s; ${receiver.received()} callbacks received)`);
  return results;
}

if (require.main === module) {
  const serveAt = process.argv.indexOf('--serve');
  if (serveAt >= 0) void serveChild(process.argv[serveAt + 1]!);
  else void benchWebhook();
}
