// `npm run bench -- follow`: one streamed reply watched by its sender and 1, 10, 100 followers over real
// sockets. Each piece carries the moment the provider produced it; every client notes when it arrived.
// Printed: the sender's delay (p50/p99) beside the slowest follower's (each follower's p50/p99 over the
// same pieces, the highest of them; goal: p99 under 1.5x the sender's at 100 followers, issue 25) and
// the p99 of each piece's slowest follower, in the same run; and the catch-up of a client that missed a
// 1,000-piece reply. The service runs on the main thread, the sender on a worker thread and the
// followers on another (each its own event loop, so a hundred clients parsing hold up neither the
// service nor the sender's reading); all read one clock (performance.timeOrigin + performance.now()).
// Once following, a client cuts its frames from its socket's bytes itself (readRaw), the sender the same
// way: ws's parsing of each of the hundred sockets counted in the stamps of those read after it
// (`FOLLOW_WS_CLIENTS=1` parses with ws as before, for comparing).
// `FOLLOW_SPLIT=1` also prints where the delays go (the service's write of each frame, then the client's
// read). Two other arrangements, for comparing (docs/design.md, "Where a follower's delay goes"; on 2
// cores both slow the sender's own reading, so neither is the measure): `FOLLOWER_THREADS=n` spreads the
// followers over n threads, `SENDER_WITH_FOLLOWERS=1` puts the sender on the followers' thread.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { CompletionRequest, CompletionResult, Provider } from '../src/agent/providers/types';
import { Service } from '../src/service';
import { fmt, percentile } from './util';

const TOKEN = 'bench-access-token-0123456789abcdef0123';
const PIECES = 500;
const PACE_MS = 5;
const CATCH_UP_PIECES = 1_000;
const FOLLOWER_THREADS = Number(process.env.FOLLOWER_THREADS ?? 1);

const clock = () => performance.timeOrigin + performance.now();

/** Answers `stream <pieces> <pace ms>` with that many pieces, each `<clock when produced>;`; anything else with one piece. */
export function streamingProvider(): Provider {
  return {
    name: 'bench-stream',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      // The turn's note (`moment`: time, git, sender) comes after the user's message in every request.
      const last = [...request.messages].reverse().find((m) => m.role === 'user' && m.moment !== true);
      const asked = /^stream (\d+) (\d+)$/.exec(typeof last?.content === 'string' ? last.content : '');
      const [pieces, paceMs] = asked ? [Number(asked[1]), Number(asked[2])] : [1, 0];
      let text = '';
      for (let i = 0; i < pieces; i += 1) {
        if (paceMs > 0) await new Promise((resolve) => setTimeout(resolve, paceMs));
        const piece = `${clock()};`;
        text += piece;
        request.onDelta?.(piece);
      }
      return { text, tool_calls: [], finish_reason: 'stop' };
    },
  };
}

/** The clients, as plain JavaScript for the worker thread. */
const CLIENTS = String.raw`
const { parentPort } = require('node:worker_threads');
const WebSocket = require('ws');
const clock = () => performance.timeOrigin + performance.now();

async function connect(url, token, onFrame = () => undefined) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
  const waiting = new Map();
  const deliver = (data, arrived) => {
    if (waiting.size > 0 && data.includes('"status":')) {
      const frame = JSON.parse(data.toString());
      if ('status' in frame && waiting.has(frame.id)) {
        waiting.get(frame.id)(frame);
        waiting.delete(frame.id);
        return;
      }
    }
    onFrame(data, arrived);
  };
  // A frame arrived when its bytes did: stamped as the socket reads them, before ws parses them.
  let readAt = 0;
  ws._socket.prependListener('data', () => (readAt = clock()));
  ws.on('message', (data) => deliver(data, readAt));
  /**
   * From now on the socket's frames are cut from its bytes here, not by ws. A hundred followers share
   * this thread and their sockets are read one after the other: a stamp taken before ws parses still
   * waited for ws's parsing of every socket read before it in the same turn (about 3-4x the reading's
   * own work, docs/design.md "Followers' p99 (s12, follow12)"), the client's cost and not the service's.
   * Every frame is still read whole and looked at; the server's frames are unmasked, a ping is answered.
   */
  const readRaw = () => {
    const socket = ws._socket;
    socket.removeAllListeners('data');
    let rest;
    socket.on('data', (chunk) => {
      const arrived = clock();
      const bytes = rest ? Buffer.concat([rest, chunk]) : chunk;
      rest = undefined;
      let at = 0;
      while (bytes.length - at >= 2) {
        let length = bytes[at + 1] & 0x7f;
        let header = 2;
        if (length === 126) [length, header] = bytes.length - at < 4 ? [Infinity, 4] : [bytes.readUInt16BE(at + 2), 4];
        else if (length === 127) [length, header] = bytes.length - at < 10 ? [Infinity, 10] : [Number(bytes.readBigUInt64BE(at + 2)), 10];
        if (bytes.length - at < header + length) break;
        const payload = bytes.subarray(at + header, at + header + length);
        if (bytes[at] === 0x81) deliver(payload, arrived);
        else if (bytes[at] === 0x89) ws.pong(payload);
        else throw new Error('unexpected frame 0x' + bytes[at].toString(16));
        at += header + length;
      }
      if (at < bytes.length) rest = bytes.subarray(at);
    });
  };
  let next = 0;
  const request = (frame) => new Promise((resolve) => {
    const id = 'b' + (next += 1);
    waiting.set(id, resolve);
    ws.send(JSON.stringify({ ...frame, id }));
  });
  const auth = await request({ type: 'auth', token });
  if (auth.status !== 'ok') throw new Error('auth: ' + JSON.stringify(auth));
  return { ws, request, readRaw, port: ws._socket.localPort };
}

// FOLLOW_WS_CLIENTS=1: the clients' frames parsed by ws, as before s12 (for comparing).
const RAW = process.env.FOLLOW_WS_CLIENTS !== '1';
// A piece's frame is read as little as it can be as it arrives: its stamp is taken from the bytes (no
// JSON parse, no string) into a preallocated array, and the frame is not kept. Parsing or keeping it
// would delay the next follower's reading in this thread (and its garbage collection every follower's).
// The sender's are collected the same way.
const DELTA = Buffer.from('"delta":"');
const ENDED = Buffer.from('"event":"turn.ended"');
function collector() {
  const c = { produced: new Float64Array(1024), read: new Float64Array(1024), count: 0, armed: false, ended: () => undefined };
  c.done = new Promise((resolve) => (c.ended = resolve));
  c.onFrame = (data, arrived) => {
    if (!c.armed) return;
    const at = data.indexOf(DELTA);
    if (at >= 0) {
      if (c.count === c.produced.length) throw new Error('more pieces than the bench asks for');
      c.produced[c.count] = Number(data.toString('latin1', at + DELTA.length, data.indexOf(59, at)));
      c.read[c.count] = arrived;
      c.count += 1;
    } else if (data.includes(ENDED)) c.ended();
  };
  // Each piece's [produced, read]: its delay is read - produced.
  c.pieces = () => Array.from({ length: c.count }, (_, i) => [c.produced[i], c.read[i]]);
  c.delays = () => Array.from({ length: c.count }, (_, i) => c.read[i] - c.produced[i]);
  return c;
}

// The sender and the followers live on two worker threads: the sender's pieces are not read behind a
// hundred followers' frames (its delay is the service's, not the bench client's).
const state = {};

async function senderStart({ url, token }) {
  state.sender = collector();
  state.senderClient = await connect(url, token, state.sender.onFrame);
  const first = await state.senderClient.request({ type: 'chat', message: 'start' });
  return { conversationId: first.data.conversation_id };
}

async function followersStart({ url, token, followers, conversationId }) {
  state.watchers = [];
  for (let i = 0; i < followers; i += 1) {
    const c = collector();
    const client = await connect(url, token, c.onFrame);
    await client.request({ type: 'follow_conversation', conversation_id: conversationId });
    state.watchers.push({ c, client });
  }
  for (const w of state.watchers) {
    w.c.armed = true;
    if (RAW) w.client.readRaw();
  }
  return {};
}

async function senderStream({ pieces, paceMs, conversationId }) {
  state.sender.armed = true;
  if (RAW) state.senderClient.readRaw();
  await state.senderClient.request({ type: 'chat', message: 'stream ' + pieces + ' ' + paceMs, conversation_id: conversationId, stream: true });
  await state.sender.done;
  state.senderClient.ws.terminate();
  return { delays: state.sender.delays(), pieces: state.sender.pieces(), port: state.senderClient.port };
}

async function followersCollect() {
  await Promise.all(state.watchers.map((w) => w.c.done));
  const delays = state.watchers.map((w) => w.c.delays());
  const received = state.watchers.map((w) => ({ port: w.client.port, pieces: w.c.pieces() }));
  for (const w of state.watchers) w.client.ws.terminate();
  return { delays, received };
}

async function catchUp({ url, token, pieces }) {
  const sender = await connect(url, token);
  const first = await sender.request({ type: 'chat', message: 'start' });
  const conversationId = first.data.conversation_id;
  const late = await connect(url, token);
  const lastSeen = (await late.request({ type: 'follow_conversation', conversation_id: conversationId })).data.seq;
  late.ws.terminate();
  await sender.request({ type: 'chat', message: 'stream ' + pieces + ' 0', conversation_id: conversationId, stream: true });
  let received = 0;
  const back = await connect(url, token, (data) => { if (JSON.parse(data.toString()).event === 'chat.delta') received += 1; });
  const started = clock();
  const answer = await back.request({ type: 'follow_conversation', conversation_id: conversationId, after_seq: lastSeen });
  const ms = clock() - started;
  back.ws.terminate();
  sender.ws.terminate();
  if (answer.data.reset || received !== pieces) throw new Error('catch-up got ' + received + ' pieces: ' + JSON.stringify(answer));
  return { ms };
}

const jobs = { senderStart, followersStart, senderStream, followersCollect, catchUp };
parentPort.on('message', async (job) => {
  try {
    parentPort.postMessage({ job: job.job, ok: await jobs[job.kind](job) });
  } catch (error) {
    parentPort.postMessage({ job: job.job, error: String(error && error.stack || error) });
  }
});
`;

/** A thread of clients; jobs may run at once on one (the sender's and the followers' when they share it). */
function runner() {
  const worker = new Worker(CLIENTS, { eval: true });
  const waiting = new Map<number, (answer: { ok?: unknown; error?: string }) => void>();
  worker.on('message', (answer: { job: number; ok?: unknown; error?: string }) => {
    waiting.get(answer.job)?.(answer);
    waiting.delete(answer.job);
  });
  let jobs = 0;
  const run = <T>(job: Record<string, unknown>) =>
    new Promise<T>((resolve, reject) => {
      jobs += 1;
      waiting.set(jobs, (answer) => (answer.error ? reject(new Error(answer.error)) : resolve(answer.ok as T)));
      worker.postMessage({ ...job, job: jobs });
    });
  return { run, stop: () => worker.terminate() };
}

/**
 * `FOLLOW_SPLIT=1`: where a follower's delay goes (docs/design.md, "Where a follower's delay goes"). The
 * service lives on this thread, so every write to its TCP sockets is noted (when, to which client port,
 * which piece) and set beside each client's read of it: produced -> written by the service -> read by the
 * client. Noting costs every write the same few hundred nanoseconds, the sender's and the followers'.
 */
function traceWrites() {
  const writes: [number, Socket, Buffer][] = [];
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
    if (Buffer.isBuffer(chunk) && chunk[0] === 0x81) writes.push([clock(), this, chunk]);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof write;
  /** When each piece (by its produced stamp) was written to each client port, since the last call. */
  const writtenAt = () => {
    const pieceOf = new Map<Buffer, number | undefined>();
    const ports = new Map<Socket, number | undefined>();
    const at = new Map<number, Map<number, number>>();
    for (const [time, socket, frame] of writes) {
      if (!pieceOf.has(frame)) {
        const header = (frame[1]! & 0x7f) < 126 ? 2 : (frame[1]! & 0x7f) === 126 ? 4 : 10;
        const event = JSON.parse(frame.subarray(header).toString()) as { event?: string; delta?: string };
        pieceOf.set(frame, event.event === 'chat.delta' ? Number(event.delta!.slice(0, -1)) : undefined);
      }
      const piece = pieceOf.get(frame);
      if (piece === undefined) continue;
      if (!ports.has(socket)) ports.set(socket, socket.remotePort);
      const port = ports.get(socket)!;
      if (!at.has(port)) at.set(port, new Map());
      at.get(port)!.set(piece, time);
    }
    writes.length = 0;
    return at;
  };
  return { writtenAt, stop: () => (Socket.prototype.write = write) };
}

type Received = { port: number; pieces: [number, number][] };

/** p50 / p99 of some milliseconds, as text. */
const spread = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `${fmt(percentile(sorted, 50))} / ${fmt(percentile(sorted, 99))}`;
};

/** Prints the split of one run: the sender's and the slowest follower's delay, produced -> written -> read. */
function printSplit(writtenAt: Map<number, Map<number, number>>, sender: Received, followers: Received[]): void {
  const parts = ({ port, pieces }: Received) => {
    const at = writtenAt.get(port) ?? new Map<number, number>();
    return pieces.map(([produced, read]) => ({ produced, written: at.get(produced)! - produced, read: read - at.get(produced)!, total: read - produced }));
  };
  const mine = parts(sender);
  const theirs = followers.map(parts);
  const p99 = (list: { total: number }[]) =>
    percentile(
      list.map((p) => p.total).sort((a, b) => a - b),
      99,
    );
  const slowest = theirs.reduce((a, b) => (p99(b) > p99(a) ? b : a));
  // Each piece: its last follower's write after the sender's, and the last follower's read after the last write.
  const lastWritten = mine.map((_piece, i) => Math.max(...theirs.map((list) => list[i]?.written ?? NaN)));
  const lastRead = mine.map((_piece, i) => Math.max(...theirs.map((list) => (list[i] ? list[i].written + list[i].read : NaN))));
  console.log(
    `  split (p50 / p99 ms): sender written ${spread(mine.map((p) => p.written))}, read after ${spread(mine.map((p) => p.read))}; ` +
      `slowest follower written ${spread(slowest.map((p) => p.written))}, read after ${spread(slowest.map((p) => p.read))}; ` +
      `each piece's last follower written ${spread(lastWritten)}, its fan-out after the sender's write ${spread(lastWritten.map((w, i) => w - mine[i]!.written))}, ` +
      `last read after the last write ${spread(lastRead.map((r, i) => r - lastWritten[i]!))}`,
  );
}

export async function benchFollow(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-follow-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, provider: 'openai', api_key: 'sk-bench' }));
  const service = await Service.open({ dataDir: dir, host: '127.0.0.1', port: 0, provider: () => streamingProvider() });
  const { port } = await service.start();
  const url = `ws://127.0.0.1:${port}/ws`;
  const followersThreads = Array.from({ length: FOLLOWER_THREADS }, () => runner());
  const senderThread = process.env.SENDER_WITH_FOLLOWERS === '1' ? followersThreads[0]! : runner();
  const results: Record<string, number> = {};
  const trace = process.env.FOLLOW_SPLIT === '1' ? traceWrites() : undefined;
  try {
    for (const followers of [0, 1, 10, 100]) {
      const { conversationId } = await senderThread.run<{ conversationId: string }>({ kind: 'senderStart', url, token: TOKEN });
      // The followers spread evenly over their threads.
      const share = (thread: number) => Math.floor((followers * (thread + 1)) / FOLLOWER_THREADS) - Math.floor((followers * thread) / FOLLOWER_THREADS);
      await Promise.all(followersThreads.map((thread, i) => thread.run({ kind: 'followersStart', url, token: TOKEN, followers: share(i), conversationId })));
      const [streamed, ...collected] = await Promise.all([
        senderThread.run<{ delays: number[]; pieces: [number, number][]; port: number }>({ kind: 'senderStream', pieces: PIECES, paceMs: PACE_MS, conversationId }),
        ...followersThreads.map((thread) => thread.run<{ delays: number[][]; received: Received[] }>({ kind: 'followersCollect' })),
      ]);
      const followed = { delays: collected.flatMap((c) => c.delays), received: collected.flatMap((c) => c.received) };
      // Each piece's slowest follower.
      const slowest = Array.from({ length: PIECES }, (_, i) => Math.max(...followed.delays.map((mine) => mine[i] ?? Infinity)));
      const sender = streamed.delays.sort((a, b) => a - b);
      const [s50, s99] = [percentile(sender, 50), percentile(sender, 99)];
      Object.assign(results, { [`sender_p50_${followers}`]: s50, [`sender_p99_${followers}`]: s99 });
      if (followers === 0) {
        console.log(`${PIECES} pieces, no follower: sender p50 ${fmt(s50)} ms p99 ${fmt(s99)} ms`);
        continue;
      }
      // The row: each follower's p99 over the same pieces as the sender's, the slowest of them.
      const each = followed.delays.map((mine) => mine.sort((a, b) => a - b));
      const f50 = Math.max(...each.map((mine) => (mine.length === PIECES ? percentile(mine, 50) : Infinity)));
      const f99 = Math.max(...each.map((mine) => (mine.length === PIECES ? percentile(mine, 99) : Infinity)));
      // A harder figure beside it: the p99 over the pieces of each piece's slowest follower.
      const pieceSlowest99 = percentile(
        slowest.sort((a, b) => a - b),
        99,
      );
      Object.assign(results, { [`follower_p50_${followers}`]: f50, [`follower_p99_${followers}`]: f99, [`piece_slowest_p99_${followers}`]: pieceSlowest99 });
      console.log(
        `${PIECES} pieces, ${followers} follower(s): sender p50 ${fmt(s50)} ms p99 ${fmt(s99)} ms; slowest follower p50 ${fmt(f50)} ms p99 ${fmt(f99)} ms; ` +
          `p99 ratio ${fmt(f99 / s99)} (goal < 1.5 at 100, issue 25); p99 of each piece's slowest follower ${fmt(pieceSlowest99)} ms (${fmt(pieceSlowest99 / s99)}x)`,
      );
      if (trace) printSplit(trace.writtenAt(), streamed, followed.received);
    }
    const { ms } = await senderThread.run<{ ms: number }>({ kind: 'catchUp', url, token: TOKEN, pieces: CATCH_UP_PIECES });
    results.catch_up_ms = ms;
    console.log(`catch-up of a missed ${CATCH_UP_PIECES}-piece reply (follow with after_seq to its answer, every piece received): ${fmt(ms)} ms`);
  } finally {
    trace?.stop();
    for (const thread of new Set([senderThread, ...followersThreads])) await thread.stop();
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

if (require.main === module) void benchFollow();
