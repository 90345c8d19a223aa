// `npm run bench -- follow`: one streamed reply watched by its sender and 1, 10, 100 followers over real
// sockets. Each piece carries the moment the provider produced it; every client notes when it arrived.
// Printed: the sender's delay (p50/p99) beside the slowest follower's for each piece, in the same run
// (goal: p99 within 2x of the sender's at 100 followers), and the catch-up of a client that missed a
// 1,000-piece reply. Clients and service share one process (and clock): the clients' own parsing is
// counted in (100 followers parse every piece on the same thread as the sender and the service), which
// makes the figures pessimistic.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { CompletionRequest, CompletionResult, Provider } from '../src/agent/providers/types';
import { Service } from '../src/service';
import { fmt, percentile } from './util';

const TOKEN = 'bench-access-token-0123456789abcdef0123';
const PIECES = 500;
const PACE_MS = 5;
const CATCH_UP_PIECES = 1_000;

/** Streams `pieces` pieces, each `<performance.now() when produced>;`, one per `paceMs` (0: at once). */
function streamingProvider(setting: { pieces: number; paceMs: number }): Provider {
  return {
    name: 'bench-stream',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      let text = '';
      for (let i = 0; i < setting.pieces; i += 1) {
        if (setting.paceMs > 0) await new Promise((resolve) => setTimeout(resolve, setting.paceMs));
        const piece = `${performance.now()};`;
        text += piece;
        request.onDelta?.(piece);
      }
      return { text, tool_calls: [], finish_reason: 'stop' };
    },
  };
}

type Frame = Record<string, unknown>;

/** An authenticated socket whose frames go to `onFrame`; `request` sends a command and waits for its answer. */
async function connect(url: string, onFrame: (frame: Frame) => void = () => undefined) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
  const waiting = new Map<string, (frame: Frame) => void>();
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as Frame;
    if ('status' in frame && typeof frame.id === 'string' && waiting.has(frame.id)) {
      waiting.get(frame.id)!(frame);
      waiting.delete(frame.id);
    } else onFrame(frame);
  });
  let next = 0;
  const request = (frame: Frame) =>
    new Promise<Frame>((resolve) => {
      const id = `b${(next += 1)}`;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ ...frame, id }));
    });
  const auth = await request({ type: 'auth', token: TOKEN });
  if (auth.status !== 'ok') throw new Error(`auth: ${JSON.stringify(auth)}`);
  return { ws, request };
}

/** Delay of each piece at arrival (ms after the provider produced it); `restart` forgets them and waits for the next turn's end. */
function delaysCollector() {
  const delays: number[] = [];
  let ended: () => void = () => undefined;
  let done = Promise.resolve();
  const restart = () => {
    delays.length = 0;
    done = new Promise<void>((resolve) => (ended = resolve));
  };
  const onFrame = (frame: Frame) => {
    const now = performance.now();
    if (frame.event === 'chat.delta') delays.push(now - Number(String(frame.delta).slice(0, -1)));
    if (frame.event === 'turn.ended') ended();
  };
  return { delays, onFrame, restart, done: () => done };
}

async function followedReply(url: string, setting: { pieces: number; paceMs: number }, followers: number) {
  setting.pieces = 1;
  setting.paceMs = 0;
  const sender = delaysCollector();
  const senderClient = await connect(url, sender.onFrame);
  const first = await senderClient.request({ type: 'chat', message: 'start' });
  const conversationId = (first.data as { conversation_id: string }).conversation_id;
  const watchers = await Promise.all(
    Array.from({ length: followers }, async () => {
      const collector = delaysCollector();
      const client = await connect(url, collector.onFrame);
      await client.request({ type: 'follow_conversation', conversation_id: conversationId });
      return { collector, client };
    }),
  );
  // The first turn's end reached everyone before their follow was answered: collect afresh.
  const collectors = [sender, ...watchers.map((w) => w.collector)];
  for (const c of collectors) c.restart();
  const allEnded = Promise.all(collectors.map((c) => c.done()));
  setting.pieces = PIECES;
  setting.paceMs = PACE_MS;
  await senderClient.request({ type: 'chat', message: 'stream it', conversation_id: conversationId, stream: true });
  await allEnded;
  // The slowest follower's delay for each piece.
  const slowest = Array.from({ length: PIECES }, (_, i) => Math.max(...watchers.map((w) => w.collector.delays[i] ?? Infinity)));
  for (const w of watchers) w.client.ws.terminate();
  senderClient.ws.terminate();
  return { sender: [...sender.delays].sort((a, b) => a - b), slowest: slowest.sort((a, b) => a - b) };
}

async function catchUp(url: string, setting: { pieces: number; paceMs: number }) {
  setting.pieces = 1;
  setting.paceMs = 0;
  const sender = await connect(url);
  const first = await sender.request({ type: 'chat', message: 'start' });
  const conversationId = (first.data as { conversation_id: string }).conversation_id;
  const late = await connect(url);
  const followed = await late.request({ type: 'follow_conversation', conversation_id: conversationId });
  const lastSeen = (followed.data as { seq: number }).seq;
  late.ws.terminate();
  setting.pieces = CATCH_UP_PIECES;
  await sender.request({ type: 'chat', message: 'a long one', conversation_id: conversationId, stream: true });
  let pieces = 0;
  const back = await connect(url, (frame) => {
    if (frame.event === 'chat.delta') pieces += 1;
  });
  const started = performance.now();
  const answer = await back.request({ type: 'follow_conversation', conversation_id: conversationId, after_seq: lastSeen });
  const ms = performance.now() - started;
  if ((answer.data as { reset: boolean }).reset || pieces !== CATCH_UP_PIECES) throw new Error(`catch-up got ${pieces} pieces: ${JSON.stringify(answer)}`);
  back.ws.terminate();
  sender.ws.terminate();
  return ms;
}

export async function benchFollow(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-follow-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, provider: 'openai', api_key: 'sk-bench' }));
  const setting = { pieces: 1, paceMs: 0 };
  const service = await Service.open({ dataDir: dir, host: '127.0.0.1', port: 0, provider: () => streamingProvider(setting) });
  const { port } = await service.start();
  const url = `ws://127.0.0.1:${port}/ws`;
  const results: Record<string, number> = {};
  try {
    // Without followers first: the sender's own baseline, to see whether followers slow it.
    const alone = (await followedReply(url, setting, 0)).sender;
    results.sender_p50_0 = percentile(alone, 50);
    results.sender_p99_0 = percentile(alone, 99);
    console.log(`${PIECES} pieces, no follower: sender p50 ${fmt(results.sender_p50_0)} ms p99 ${fmt(results.sender_p99_0)} ms`);
    for (const followers of [1, 10, 100]) {
      const { sender, slowest } = await followedReply(url, setting, followers);
      const [s50, s99, f50, f99] = [percentile(sender, 50), percentile(sender, 99), percentile(slowest, 50), percentile(slowest, 99)];
      Object.assign(results, { [`sender_p50_${followers}`]: s50, [`sender_p99_${followers}`]: s99, [`follower_p50_${followers}`]: f50, [`follower_p99_${followers}`]: f99 });
      console.log(
        `${PIECES} pieces, ${followers} follower(s): sender p50 ${fmt(s50)} ms p99 ${fmt(s99)} ms; slowest follower p50 ${fmt(f50)} ms p99 ${fmt(f99)} ms; p99 ratio ${fmt(f99 / s99)} (goal <= 2 at 100)`,
      );
    }
    const ms = await catchUp(url, setting);
    results.catch_up_ms = ms;
    console.log(`catch-up of a missed ${CATCH_UP_PIECES}-piece reply (follow with after_seq to its answer, every piece received): ${fmt(ms)} ms`);
  } finally {
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

if (require.main === module) void benchFollow();
