// Start-up: how long `serve` takes until it listens (the first /health that answers, 503 `starting`
// while its store opens) and until it is usable (`get_config` answered over a WebSocket that connected
// at listening: the row), against a bare `node -e 0` in the same run (median of several runs,
// each with an empty data directory), and whether a chat sent one second after the start is answered
// as fast as the next one (the heavy modules load after listening: see Service.warmUp). Real
// processes: node dist/cli.js serve (BENCH_CLI=path measures another build; BENCH_START=chat or headless one part alone;
// BENCH_CHAT_PROVIDER=anthropic-tls gives the chats a provider over https whose origin no warm-up probe asks;
// BENCH_CHAT_AFTER_MS sends the first chat that long after listening instead of one second; BENCH_CHAT_RTT_MS puts a
// network's round trip between the service and that provider; BENCH_CHAT_CONTINUES=1 has the chats continue a
// conversation an earlier start made).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAnthropic } from '../test/helpers/fake-anthropic';
import { startFakeOpenAI } from '../test/helpers/fake-openai';
import { selfSignedCertificate } from '../test/helpers/self-signed';
import { TestClient } from '../test/helpers/ws-client';
import { fmt } from './util';

const CLI = process.env.BENCH_CLI ?? join(__dirname, '..', 'dist', 'cli.js');
const TOKEN = 'bench-access-token-0123456789abcdef0123';
const RUNS = 7;
const CHAT_RUNS = Number(process.env.BENCH_CHAT_RUNS ?? 5);
/** How long after listening the first chat is sent (BENCH_CHAT_AFTER_MS; the row: one second). */
const CHAT_AFTER_MS = Number(process.env.BENCH_CHAT_AFTER_MS ?? 1000);
/**
 * A pause after the client's auth and between the chats (BENCH_CHAT_GAP_MS, default none): the work a
 * command leaves behind it (a journal's sync, the history worker's answer, log lines) then ends before
 * the next chat's window rather than inside it.
 */
const CHAT_GAP_MS = Number(process.env.BENCH_CHAT_GAP_MS ?? 0);
/**
 * BENCH_CHAT_CONTINUES=1: the chats continue a conversation an earlier start made (a phone's usual first
 * chat after a restart: its history is read from service.db and history.db), rather than each beginning one.
 */
const CHAT_CONTINUES = process.env.BENCH_CHAT_CONTINUES === '1';

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export interface Timing {
  ms: number;
  /**
   * CPU time of the main thread (the history worker's SQLite starts beside it, on another core): on this
   * shared machine less noisy than the wall clock.
   */
  cpuMs: number;
}

/** `node -e 0`, printing the CPU time it used as it exits. */
export function bareNode(): Promise<Timing> {
  const began = performance.now();
  const code = 'process.on("exit", () => { const u = process.cpuUsage(); process.stdout.write(String((u.user + u.system) / 1000)); })';
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', () => resolve({ ms: performance.now() - began, cpuMs: Number(out) }));
  });
}

/** The time a live process's main thread has run on a CPU (Linux: /proc/<pid>/task/<pid>/schedstat, in ns). */
function cpuMsOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

function health(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
  });
}

export interface Serving {
  child: ChildProcess;
  port: number;
  /** From spawn to the first answer of /health (listening; 503 `starting` while the store opens), and the CPU time used until then. */
  listening: Timing;
  /** From spawn to `get_config` answered over a WebSocket connected at listening (usable), and the CPU time until then. */
  ready: Timing;
  /** What it wrote to stderr so far (its log). */
  log(): string;
  stop(): Promise<void>;
}

/** A port free now (the service is given it, so the bench can knock before `serve` prints it). */
function freePort(): Promise<number> {
  const server = createServer();
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    }),
  );
}

/** Spawns `serve` and measures from the spawn to listening (/health answers) and to ready (`get_config` answered over ws). */
export async function serve(dataDir: string, cli = CLI, env: Record<string, string> = {}): Promise<Serving> {
  const port = await freePort();
  const began = performance.now();
  const child = spawn(process.execPath, [cli, 'serve', '--data-dir', dataDir, '--port', String(port)], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  child.stderr!.on('data', (d) => (out += d));
  const stop = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null) return done();
      child.once('exit', () => done());
      child.kill('SIGTERM');
    });
  const exited = new Promise<never>((_resolve, reject) => child.once('exit', (code) => reject(new Error(`serve exited ${code}:\n${out}`))));
  exited.catch(() => undefined);
  const at = (): Timing => ({ ms: performance.now() - began, cpuMs: cpuMsOf(child.pid!) });
  const measure = async () => {
    while ((await health(port)) === 0) {
      if (performance.now() - began > 30_000) throw new Error(`serve did not answer /health:\n${out}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    const listening = at();
    // service.json is written (a new access token, in an empty directory) before the service listens.
    const token = (JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8')) as { auth_token: string }).auth_token;
    // Its auth and get_config wait in the service for the store's open (Service.begin).
    const client = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, token);
    const reply = await client.request({ type: 'get_config' }, 30_000);
    const ready = at();
    client.close();
    if (reply.status !== 'ok') throw new Error(`get_config failed: ${JSON.stringify(reply)}`);
    return { child, port, listening, ready, log: () => out, stop };
  };
  try {
    return await Promise.race([measure(), exited]);
  } catch (error) {
    await stop();
    throw error;
  }
}

export async function withDataDir<T>(run: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-start-'));
  try {
    return await run(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function headlessStart(): Promise<void> {
  const bare: Timing[] = [];
  const listening: Timing[] = [];
  const ready: Timing[] = [];
  // Alternated, so a change in the machine's load touches both sides alike.
  for (let i = 0; i < RUNS; i += 1) {
    bare.push(await bareNode());
    await withDataDir(async (dir) => {
      const serving = await serve(dir);
      await serving.stop();
      listening.push(serving.listening);
      ready.push(serving.ready);
    });
  }
  for (const [what, timings, goal] of [
    ['listening (serve -> /health answers)', listening, ''],
    ["ready (serve -> get_config answered over ws; the issue's row)", ready, ' (goal < 4x)'],
  ] as const) {
    for (const key of ['ms', 'cpuMs'] as const) {
      const serveMs = median(timings.map((t) => t[key]));
      const bareMs = median(bare.map((t) => t[key]));
      console.log(
        `headless start, ${what}, empty data directory, ${key === 'ms' ? 'wall clock' : 'main thread CPU time'}, median of ${RUNS}: ` +
          `${fmt(serveMs, 0)} ms; bare node -e 0 ${fmt(bareMs, 0)} ms: ${fmt(serveMs / bareMs, 1)}x${goal}`,
      );
    }
  }
}

/** The provider the chats are sent to: its part of service.json, what `serve` needs to reach it, and its end. */
export interface ChatProvider {
  config: Record<string, unknown>;
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * The chats' provider (BENCH_CHAT_PROVIDER): by default an OpenAI-compatible server on 127.0.0.1, a local
 * server, whose window the warm-up asks (so its connection is open before the first chat); with
 * `anthropic-tls`, Anthropic's API over https (a self-signed certificate `serve` trusts through
 * NODE_EXTRA_CA_CERTS), as a vendor's host is reached: no probe asks its origin, and its first
 * connection loads Node's TLS and makes its handshake.
 */
export async function chatProvider(kind = process.env.BENCH_CHAT_PROVIDER ?? 'openai'): Promise<ChatProvider> {
  if (kind === 'openai') {
    const fake = await startFakeOpenAI();
    fake.setDefault(() => ({ text: 'A short reply, streamed.', chunks: 5 }));
    return { config: { provider: 'openai', model: 'fake-model', base_url: fake.url, api_key: 'sk-bench' }, env: {}, close: () => fake.close() };
  }
  if (kind !== 'anthropic-tls') throw new Error(`BENCH_CHAT_PROVIDER: openai or anthropic-tls, not ${kind}`);
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-tls-'));
  const { key, cert, certFile } = selfSignedCertificate(dir);
  const fake = await startFakeAnthropic({ tls: { key, cert } });
  fake.setDefault(() => ({ text: 'A short reply, streamed.', chunks: 5 }));
  const rttMs = Number(process.env.BENCH_CHAT_RTT_MS ?? 0);
  const far = rttMs > 0 ? await roundTripProxy(fake.port, rttMs) : undefined;
  return {
    config: { provider: 'anthropic', model: 'claude-fake-2', base_url: far ? `https://127.0.0.1:${far.port}` : fake.url, api_key: 'sk-bench' },
    env: { NODE_EXTRA_CA_CERTS: certFile },
    close: async () => {
      await far?.close();
      await fake.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A TCP proxy on 127.0.0.1 in front of `targetPort` that holds each chunk half a round trip in each
 * direction, and a new connection's first chunk a round trip more (TCP's handshake): a provider across a
 * network, roughly (no loss, no bandwidth limit; TLS passes through untouched).
 */
async function roundTripProxy(targetPort: number, rttMs: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const relay = (from: Socket, to: Socket, firstExtraMs: number) => {
    let extra = firstExtraMs;
    from.on('data', (chunk) => {
      setTimeout(() => to.destroyed || to.write(chunk), rttMs / 2 + extra);
      extra = 0;
    });
    from.on('end', () => setTimeout(() => to.end(), rttMs / 2));
  };
  const server = createServer((client) => {
    track(client);
    const upstream = connect(targetPort, '127.0.0.1');
    track(upstream);
    relay(client, upstream, rttMs);
    relay(upstream, client, 0);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface FirstChats {
  first: Timing;
  second: Timing;
  third: Timing;
  warmedUp: boolean;
}

/**
 * One run: a chat one second after `listening`, then a second one (each a new conversation); their
 * times, and the CPU time the service's main thread ran during each (what the wall clock is made of on
 * a quiet machine; on a loaded one the wall clock is mostly waiting for a core, and the warm-up itself,
 * a hundred milliseconds of CPU, may not be over one second after the start).
 */
export async function firstChats(provider: ChatProvider, cli = CLI): Promise<FirstChats> {
  return withDataDir(async (dir) => {
    await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, ...provider.config }));
    const conversationId = CHAT_CONTINUES ? await conversationBefore(dir, cli, provider) : undefined;
    const serving = await serve(dir, cli, provider.env);
    try {
      await new Promise((r) => setTimeout(r, CHAT_AFTER_MS));
      const client = await TestClient.authed(`ws://127.0.0.1:${serving.port}/ws`, TOKEN);
      try {
        const chat = async (): Promise<Timing> => {
          const began = performance.now();
          const cpuBefore = cpuMsOf(serving.child.pid!);
          const reply = await client.request({ type: 'chat', message: 'hello', stream: true, ...(conversationId ? { conversation_id: conversationId } : {}) }, 30_000);
          if (reply.status !== 'ok') throw new Error(`chat failed: ${JSON.stringify(reply)}`);
          return { ms: performance.now() - began, cpuMs: cpuMsOf(serving.child.pid!) - cpuBefore };
        };
        // The service logs `service.warmed_up` once its warm-up after listening is over.
        const warmedUp = serving.log().includes('service.warmed_up');
        const gap = () => CHAT_GAP_MS > 0 && new Promise((r) => setTimeout(r, CHAT_GAP_MS));
        await gap();
        const first = await chat();
        await gap();
        const second = await chat();
        await gap();
        const third = await chat();
        return { first, second, third, warmedUp };
      } finally {
        client.close();
      }
    } finally {
      await serving.stop();
    }
  });
}

/** A conversation of one exchange, made by a start of its own before the measured one (BENCH_CHAT_CONTINUES). */
async function conversationBefore(dir: string, cli: string, provider: ChatProvider): Promise<string> {
  const serving = await serve(dir, cli, provider.env);
  try {
    const client = await TestClient.authed(`ws://127.0.0.1:${serving.port}/ws`, TOKEN);
    try {
      const reply = await client.request({ type: 'chat', message: 'an earlier chat', stream: true }, 30_000);
      if (reply.status !== 'ok') throw new Error(`chat failed: ${JSON.stringify(reply)}`);
      return (reply.data as { conversation_id: string }).conversation_id;
    } finally {
      client.close();
    }
  } finally {
    await serving.stop();
  }
}

async function firstChat(): Promise<void> {
  const provider = await chatProvider();
  try {
    const runs: FirstChats[] = [];
    for (let i = 0; i < CHAT_RUNS; i += 1) runs.push(await firstChats(provider));
    for (const key of ['ms', 'cpuMs'] as const) {
      const ratios = runs.map(({ first, second }) => first[key] / second[key]);
      console.log(
        `chat sent 1 s after start vs the second chat, ${key === 'ms' ? 'wall clock' : 'main thread CPU time'}, median of ${CHAT_RUNS}: ` +
          `${fmt(median(runs.map(({ first }) => first[key])), 1)} ms vs ${fmt(median(runs.map(({ second }) => second[key])), 1)} ms: ` +
          `${fmt(median(ratios), 2)}x (goal: as fast, ~1x; runs ${ratios.map((r) => fmt(r, 2)).join(' ')})`,
      );
    }
    console.log(`  the third chat: ${fmt(median(runs.map(({ third }) => third.cpuMs)), 1)} ms of main thread CPU, ${fmt(median(runs.map(({ third }) => third.ms)), 1)} ms wall`);
    console.log(`  the warm-up after listening was over when the first chat was sent in ${runs.filter((run) => run.warmedUp).length} of ${CHAT_RUNS} runs`);
  } finally {
    await provider.close();
  }
}

export async function benchStart(): Promise<void> {
  // BENCH_START=chat runs the chat part alone (bisecting it over builds with BENCH_CLI), BENCH_START=headless the start alone.
  if (process.env.BENCH_START !== 'chat') await headlessStart();
  if (process.env.BENCH_START !== 'headless') await firstChat();
}
