// `npm run bench -- follow`: one streamed reply watched by its sender and 1, 10, 100 followers over real
// sockets. Each piece carries the moment the provider produced it; every client notes when it arrived.
// Printed: the sender's delay (p50/p99) beside the slowest follower's (each follower's p50/p99 over the
// same pieces, the highest of them; goal: p99 under 1.5x the sender's at 100 followers, issue 25) and
// the p99 of each piece's slowest follower, in the same run; and the catch-up of a client that missed a
// 1,000-piece reply. The service runs on the main thread, the clients on a worker thread (their own
// event loop); all read one clock (performance.timeOrigin + performance.now()). The sender's client
// lives on a thread of its own, as when the issue's figures were taken. `SENDER_WITH_FOLLOWERS=1` reads
// it on the followers' thread (s14, follow14: the same client and scheduling as the followers'); a review
// found that arrangement pulls the ratio toward 1 whatever the service does (the shared thread's stops
// and reads are added to both sides: the sender's p99 rose 53-62%, the followers' 13-22%), so it is not
// the row's default (docs/design.md "Followers' p99 read alike (s14, follow14)").
// Every client (the sender the same way) is a small WebSocket client of the bench's own that reads its
// socket into one buffer and cuts its frames from the bytes (connectRaw): with ws's client, reading a
// hundred sockets on one thread made a scavenge every 20 pieces there, on the followers' side only
// (`FOLLOW_WS_CLIENTS=1`: ws's client, for comparing). `FOLLOW_SPLIT=1` also prints where the delays go
// (the service's write of each frame, then the client's read), the spread of the followers' p99s, each
// thread's garbage collection while the stage streams, each client thread's time on a core, the
// service's stop right after a write that wakes a client thread (the sender's, the fan-out's first), and
// each watcher's slowest pieces with the service's and the clients' thread's waits for a core around them
// (`FOLLOW_DUMP=<path>` with it: each stage's pieces and writes as JSON). `FOLLOWER_THREADS=n` spreads the
// followers over n threads (the sender on the first), for comparing (docs/design.md, "Where a
// follower's delay goes": on 2 cores each thread more takes the core from the others).
// The clients' heaps (s35, follow35): both client threads are made with a 16 MB young generation and each
// is collected whole just before every stage, so that neither collects while a stage streams; each stage
// prints the clients' collections in it and what their young generations grew. A fix of the bench, not of
// the service: before, V8's memory reducer came due about 8 s after the threads started, in the
// 100-follower stage, on both threads (`--trace-gc`: pauses of 2-17 ms), and the followers' thread,
// allocating 7-9 MB a 100-follower stage into a 1 MB semi-space, scavenged 2-4 times in it while the
// sender's (0.2-0.8 MB) did not: in 40 runs the followers' thread collected in the stage in all 40, the
// sender's in 9; after the change neither in any of 50. It did not move the row at load 1-6 (32 / 50
// under 1.5 before, 31 / 50 after, interleaved; docs/design.md "The clients' heaps, and the followers'
// thread's waits for a core (s35, follow35)": the misses there were the threads' waits for a core).
// `FOLLOW_CLIENT_HEAP=old`: as before (`collected`: the collection before each stage only; `young`: the
// young generation only). Beside the row, each stage also prints the ratio with every piece stamped at
// the first read of its thread's wake (one thread's reading order of a hundred sockets taken out).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Socket } from 'node:net';
import { PerformanceObserver } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import type { CompletionRequest, CompletionResult, Provider } from '../src/agent/providers/types';
import { serviceClass } from './bundled';
import { fmt, mainThreadSched, percentile } from './util';

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
const { connect: tcpConnect } = require('node:net');
const { createHash, randomBytes } = require('node:crypto');
const WebSocket = require('ws');
const clock = () => performance.timeOrigin + performance.now();

/** Sends a command and resolves with its answer (matched by id); answers are found among the frames by 'answered'. */
function requests(sendText) {
  const waiting = new Map();
  let next = 0;
  const request = (frame) =>
    new Promise((resolve) => {
      const id = 'b' + (next += 1);
      waiting.set(id, resolve);
      sendText(JSON.stringify({ ...frame, id }));
    });
  /** Whether the frame (bytes[start, end)) was the answer to a request (then handed to it). */
  const answered = (bytes, start, end) => {
    // Searched within this frame only (a Buffer's indexOf has no end: a subarray bounds it).
    const status = waiting.size === 0 ? -1 : bytes.subarray(start, end).indexOf('"status":');
    if (status < 0) return false;
    const frame = JSON.parse(bytes.toString('utf8', start, end));
    if (!('status' in frame) || !waiting.has(frame.id)) return false;
    waiting.get(frame.id)(frame);
    waiting.delete(frame.id);
    return true;
  };
  return { request, answered };
}

/**
 * A WebSocket client of its own (RFC 6455: the upgrade, masked frames out, the server's unmasked frames
 * cut from the socket's bytes). A hundred followers share this thread and their sockets are read one
 * after the other, so every follower's stamp waits for the reading of those read before it in the same
 * turn, and for this thread's garbage collection: the bench's cost, not the service's delivery, and
 * nothing a follower on its own device would see. The socket reads into one buffer of its own (net's
 * 'onread': no Buffer, no stream machinery per read) and a piece's stamp is taken from the bytes, so
 * reading makes no garbage (docs/design.md "Followers' p99 in every run (s13, follow13)"; with ws's
 * client, as before s12: FOLLOW_WS_CLIENTS=1). Every frame is still read whole; a ping is answered.
 * 'onFrame(bytes, start, end, arrived)': a text frame's payload, valid only during the call.
 */
function connectRaw(url, token, onFrame) {
  const { hostname, port, pathname } = new URL(url);
  const key = randomBytes(16).toString('base64');
  const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  const sendFrame = (opcode, payload) => {
    const header = payload.length < 126 ? 2 : 4;
    const frame = Buffer.allocUnsafe(header + 4 + payload.length);
    frame[0] = 0x80 | opcode;
    if (header === 2) frame[1] = 0x80 | payload.length;
    else (frame[1] = 0x80 | 126), frame.writeUInt16BE(payload.length, 2);
    const mask = randomBytes(4);
    mask.copy(frame, header);
    for (let i = 0; i < payload.length; i += 1) frame[header + 4 + i] = payload[i] ^ mask[i & 3];
    socket.write(frame);
  };
  const { request, answered } = requests((text) => sendFrame(1, Buffer.from(text)));
  let upgraded;
  let failed;
  const ready = new Promise((resolve, reject) => ((upgraded = resolve), (failed = reject)));
  let head = ''; // the upgrade's answer, until its blank line
  let rest; // a frame's start, when a read ended inside it (copied: the read buffer is used again)
  const frames = (bytes, end, arrived) => {
    let at = 0;
    while (end - at >= 2) {
      // No array or object made a frame (a destructuring made two: s35).
      let length = bytes[at + 1] & 0x7f;
      let header = 2;
      if (length === 126) (header = 4), (length = end - at < 4 ? Infinity : bytes.readUInt16BE(at + 2));
      else if (length === 127) (header = 10), (length = end - at < 10 ? Infinity : Number(bytes.readBigUInt64BE(at + 2)));
      if (end - at < header + length) break;
      const start = at + header;
      const stop = start + length;
      if (bytes[at] === 0x81) answered(bytes, start, stop) || onFrame(bytes, start, stop, arrived);
      else if (bytes[at] === 0x89) sendFrame(0xa, Buffer.from(bytes.subarray(start, stop)));
      else if (bytes[at] !== 0x88) throw new Error('unexpected frame 0x' + bytes[at].toString(16));
      at = stop;
    }
    rest = at < end ? Buffer.from(bytes.subarray(at, end)) : undefined;
  };
  const read = (n, buffer) => {
    const arrived = clock();
    if (head !== undefined) {
      head += buffer.toString('latin1', 0, n);
      const blank = head.indexOf('\r\n\r\n');
      if (blank < 0) return;
      if (!head.startsWith('HTTP/1.1 101') || !head.includes('\r\nSec-WebSocket-Accept: ' + accept + '\r\n')) return failed(new Error('upgrade refused: ' + head));
      const after = Buffer.from(head.slice(blank + 4), 'latin1');
      head = undefined;
      upgraded();
      return frames(after, after.length, arrived);
    }
    if (rest === undefined) return frames(buffer, n, arrived);
    const whole = Buffer.concat([rest, buffer.subarray(0, n)]);
    frames(whole, whole.length, arrived);
  };
  const socket = tcpConnect({ host: hostname, port: Number(port), onread: { buffer: Buffer.allocUnsafe(64 * 1024), callback: read } });
  socket.setNoDelay(true);
  socket.once('error', (error) => failed(error));
  socket.once('connect', () =>
    socket.write('GET ' + pathname + ' HTTP/1.1\r\nHost: ' + hostname + ':' + port + '\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ' + key + '\r\nSec-WebSocket-Version: 13\r\n\r\n'),
  );
  return ready.then(() => ({ request, close: () => socket.destroy(), port: socket.localPort }));
}

/** FOLLOW_WS_CLIENTS=1: ws's client, its frames stamped as the socket reads them (before ws parses them), as before s12 (s12's own frame cutting of ws's socket is gone). */
async function connectWs(url, token, onFrame) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
  const { request, answered } = requests((text) => ws.send(text));
  let readAt = 0;
  ws._socket.prependListener('data', () => (readAt = clock()));
  ws.on('message', (data) => answered(data, 0, data.length) || onFrame(data, 0, data.length, readAt));
  return { request, close: () => ws.terminate(), port: ws._socket.localPort };
}

async function connect(url, token, onFrame = () => undefined) {
  const client = await (process.env.FOLLOW_WS_CLIENTS === '1' ? connectWs : connectRaw)(url, token, onFrame);
  const auth = await client.request({ type: 'auth', token });
  if (auth.status !== 'ok') throw new Error('auth: ' + JSON.stringify(auth));
  return client;
}

/** The number written in ASCII at bytes[at, end) (digits, one point), read without making a string. */
function numberAt(bytes, at, end) {
  let whole = 0;
  let i = at;
  for (; i < end && bytes[i] !== 46; i += 1) whole = whole * 10 + (bytes[i] - 48);
  let fraction = 0;
  let scale = 1;
  for (i += 1; i < end; i += 1) (fraction = fraction * 10 + (bytes[i] - 48)), (scale *= 10);
  return whole + fraction / scale;
}

// A piece's frame is read as little as it can be as it arrives: its stamp is taken from the bytes (no
// JSON parse, no string) into a preallocated array, and the frame is not kept. Parsing or keeping it
// would delay the next follower's reading in this thread (and its garbage collection every follower's).
// The sender's are collected the same way.
const { readFileSync } = require('node:fs');
const split = process.env.FOLLOW_SPLIT === '1';
/** FOLLOW_SPLIT=1: this thread's time so far waiting for a core (schedstat's run_delay, ms), noted at each piece's first read on this thread. */
const waited = () => Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[1]) / 1e6;
/** FOLLOW_SPLIT=1: this thread's time so far on a core (schedstat's run time, ms): what reading its clients costs it. */
const ran = () => (split ? Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]) / 1e6 : NaN);
const pieceWait = new Float64Array(1024);
let sampled = 0;
const DELTA = Buffer.from('"delta":"');
// What a frame is, from its first bytes: every event the service sends names itself first. A search for
// a name anywhere in the frame ran on to the end of the socket's 64 KB read buffer (a Buffer's indexOf
// has no end) for every frame without it: the turn's opening frames (its user message and the
// conversation's updates) then cost the followers' thread a hundred times what they cost the sender's,
// right at the first pieces (docs/design.md "The first pieces and the last (s27, follow27)").
const EVENT = Buffer.from('{"event":"');
const PIECE_EVENT = Buffer.from('{"event":"chat.delta"');
const ENDED_EVENT = Buffer.from('{"event":"turn.ended"');
/** Whether the frame bytes[start, end) begins with the prefix (no copy, nothing read past the frame). */
const startsWith = (bytes, start, end, prefix) => end - start >= prefix.length && bytes.compare(prefix, 0, prefix.length, start, start + prefix.length) === 0;
// A second stamp of each piece, beside the row's: the time of the first read of the thread's wake in which
// it was read (its poll phase; a setImmediate marks the phase's end). Every socket read in one wake was
// ready when the thread woke, so this takes out the order in which one thread reads a hundred sockets
// (a follower on its own device reads one), and nothing else; the sender's thread, one socket, reads
// alike with either stamp (docs/design.md "The clients' heaps ... (s35, follow35)"). Printed beside the row, not the row.
let wakeAt = NaN;
const wakeEnds = () => (wakeAt = NaN);
const wakeStamp = (arrived) => {
  if (Number.isNaN(wakeAt)) (wakeAt = arrived), setImmediate(wakeEnds);
  return wakeAt;
};
function collector() {
  const c = { produced: new Float64Array(1024), read: new Float64Array(1024), woke: new Float64Array(1024), count: 0, armed: false, ended: () => undefined };
  c.done = new Promise((resolve) => (c.ended = resolve));
  c.onFrame = (bytes, start, end, arrived) => {
    if (!c.armed) return;
    if (!startsWith(bytes, start, end, EVENT)) throw new Error('a frame that is neither an answer nor an event: ' + bytes.toString('utf8', start, end));
    if (startsWith(bytes, start, end, PIECE_EVENT)) {
      const at = bytes.indexOf(DELTA, start);
      if (c.count === c.produced.length) throw new Error('more pieces than the bench asks for');
      c.produced[c.count] = numberAt(bytes, at + DELTA.length, bytes.indexOf(59, at));
      c.read[c.count] = arrived;
      c.woke[c.count] = wakeStamp(arrived);
      if (split && c.count >= sampled) (pieceWait[c.count] = waited()), (sampled = c.count + 1);
      c.count += 1;
    } else if (startsWith(bytes, start, end, ENDED_EVENT)) c.ended();
  };
  // Each piece's [produced, read]: its delay is read - produced.
  c.pieces = () => Array.from({ length: c.count }, (_, i) => [c.produced[i], c.read[i]]);
  c.delays = () => Array.from({ length: c.count }, (_, i) => c.read[i] - c.produced[i]);
  c.wokeDelays = () => Array.from({ length: c.count }, (_, i) => c.woke[i] - c.produced[i]);
  return c;
}

// This thread's clients: the followers' (and the sender's with SENDER_WITH_FOLLOWERS=1).
const state = {};

// This thread's garbage collection pauses while a stage streams (count, total, longest ms; printed for
// every stage, one observer entry a collection, nothing a frame).
const { PerformanceObserver } = require('node:perf_hooks');
const stageGc = { count: 0, total: 0, longest: 0, on: false, pauses: [], ranFrom: NaN, youngFrom: NaN, from: Infinity };
new PerformanceObserver((list) => {
  if (!stageGc.on) return;
  // Entries come after their collection: one begun before the stage (settle's own) is not the stage's.
  for (const e of list.getEntries()) if (e.startTime >= stageGc.from) (stageGc.count += 1), (stageGc.total += e.duration), (stageGc.longest = Math.max(stageGc.longest, e.duration)), stageGc.pauses.push([performance.timeOrigin + e.startTime, e.duration]);
}).observe({ entryTypes: ['gc'] });
/** This thread's young generation in use (MB): with no collection in a stage, its growth is what the stage's reading allocated. */
const { getHeapSpaceStatistics } = require('node:v8');
const young = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_used_size / 2 ** 20;
// Each client thread's heap is collected whole just before each stage (the default; FOLLOW_CLIENT_HEAP=old:
// not, as before s35). Left alone, V8's memory reducer (a full collection about 8 s after a heap has grown,
// incremental, its last step a pause of 2-17 ms here) and scavenges of what earlier stages left came due in
// whichever stage they fell, mostly the 100 followers' (about 8 s in), and the followers' thread, holding
// a hundred sockets' objects, paused the longer: the bench's timing, not the service's delivery. Collected
// before the stage, neither thread carries anything into it and the reducer's next turn moves 8 s on
// (docs/design.md "The clients' heaps ... (s35, follow35)"). The same code and settings on both threads.
// (The main thread made this thread with V8's gc() on its global: clientThreads.)
const collectAll = typeof globalThis.gc === 'function' ? globalThis.gc : undefined;
function settle() {
  collectAll?.();
  return {};
}
/** This stage's collections (count, total, longest ms; each pause's start and length), young generation grown (MB) and each piece's wait sample; then reset for the next. */
const gcTaken = () => {
  const taken = { count: stageGc.count, total: stageGc.total, longest: stageGc.longest, pauses: stageGc.pauses, young: young() - stageGc.youngFrom, waits: Array.from(pieceWait.subarray(0, sampled)), cpu: ran() - stageGc.ranFrom };
  Object.assign(stageGc, { count: 0, total: 0, longest: 0, on: false, pauses: [], ranFrom: NaN, youngFrom: NaN, from: Infinity });
  sampled = 0;
  return taken;
};
/** The stage starts for this thread: its collections counted from here. */
const stageFrom = () => {
  stageGc.on = true;
  stageGc.from = performance.now();
  stageGc.ranFrom = ran();
  stageGc.youngFrom = young();
};

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
  for (const w of state.watchers) w.c.armed = true;
  return {};
}

/** Just before the stage: this thread's heap collected (FOLLOW_CLIENT_HEAP=old: not), its counts started. */
function stageStart() {
  settle();
  stageFrom();
  return {};
}

async function senderStream({ pieces, paceMs, conversationId }) {
  state.sender.armed = true;
  await state.senderClient.request({ type: 'chat', message: 'stream ' + pieces + ' ' + paceMs, conversation_id: conversationId, stream: true });
  await state.sender.done;
  state.senderClient.close();
  // On the followers' thread (the default) their collect takes this thread's figures.
  return { delays: state.sender.delays(), wokeDelays: state.sender.wokeDelays(), pieces: state.sender.pieces(), port: state.senderClient.port, gc: state.watchers === undefined ? gcTaken() : undefined };
}

async function followersCollect() {
  await Promise.all(state.watchers.map((w) => w.c.done));
  const delays = state.watchers.map((w) => w.c.delays());
  const wokeDelays = state.watchers.map((w) => w.c.wokeDelays());
  const received = state.watchers.map((w) => ({ port: w.client.port, pieces: w.c.pieces() }));
  for (const w of state.watchers) w.client.close();
  return { delays, wokeDelays, received, gc: gcTaken() };
}

async function catchUp({ url, token, pieces }) {
  const sender = await connect(url, token);
  const first = await sender.request({ type: 'chat', message: 'start' });
  const conversationId = first.data.conversation_id;
  const late = await connect(url, token);
  const lastSeen = (await late.request({ type: 'follow_conversation', conversation_id: conversationId })).data.seq;
  late.close();
  await sender.request({ type: 'chat', message: 'stream ' + pieces + ' 0', conversation_id: conversationId, stream: true });
  let received = 0;
  const back = await connect(url, token, (bytes, start, end) => { if (JSON.parse(bytes.toString('utf8', start, end)).event === 'chat.delta') received += 1; });
  const started = clock();
  const answer = await back.request({ type: 'follow_conversation', conversation_id: conversationId, after_seq: lastSeen });
  const ms = clock() - started;
  back.close();
  sender.close();
  if (answer.data.reset || received !== pieces) throw new Error('catch-up got ' + received + ' pieces: ' + JSON.stringify(answer));
  return { ms };
}

const jobs = { senderStart, followersStart, stageStart, senderStream, followersCollect, catchUp };
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
  const online = new Promise((resolve) => worker.once('online', resolve));
  return { run, online, stop: () => worker.terminate() };
}

/**
 * The clients' threads, each with the same young generation: by default (s35) a semi-space of
 * CLIENT_SEMI_SPACE_MB from the start (V8 starts one at 1 MB and grows it only as objects survive, so the
 * followers' thread, which allocates some 3-4 MB reading a 100-follower stage, scavenged 3-5 times in it and
 * the sender's thread none), set with V8's flag while these threads' heaps are made and put back before the
 * service opens (it is read once, when a heap is made). `FOLLOW_CLIENT_HEAP=old`: V8's defaults, as before
 * (`collected`: the heaps collected before each stage only; `young`: this semi-space only).
 */
const CLIENT_SEMI_SPACE_MB = 16;
async function clientThreads(followerThreads: number, senderWithFollowers: boolean) {
  const heap = process.env.FOLLOW_CLIENT_HEAP ?? '';
  const [young, collected] = [!['old', 'collected'].includes(heap), !['old', 'young'].includes(heap)];
  // Both flags are read when a heap and its context are made: set for these threads only.
  if (young) setFlagsFromString(`--min-semi-space-size=${CLIENT_SEMI_SPACE_MB}`);
  if (collected) setFlagsFromString('--expose-gc');
  const followers = Array.from({ length: followerThreads }, () => runner());
  const sender = senderWithFollowers ? followers[0]! : runner();
  await Promise.all([sender, ...followers].map((thread) => thread.online));
  if (young) setFlagsFromString('--min-semi-space-size=0');
  if (collected) setFlagsFromString('--no-expose-gc');
  return { followers, sender };
}

/**
 * `FOLLOW_SPLIT=1`: where a follower's delay goes (docs/design.md, "Where a follower's delay goes"). The
 * service lives on this thread, so every write to its TCP sockets is noted (when, to which client port,
 * which piece) and set beside each client's read of it: produced -> written by the service -> read by the
 * client. Noting costs every write the same few hundred nanoseconds, the sender's and the followers'.
 */
function traceWrites() {
  const writes: [number, Socket, Buffer][] = [];
  // This thread's wait for a core (ms so far) at each frame's first write.
  const frameWait = new Map<Buffer, number>();
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
    if (Buffer.isBuffer(chunk) && chunk[0] === 0x81) {
      writes.push([clock(), this, chunk]);
      if (!frameWait.has(chunk)) frameWait.set(chunk, mainThreadSched().wait);
    }
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof write;
  /** When each piece (by its produced stamp) was written to each client port, since the last call; and the service thread's wait sample at its first write. */
  const writtenAt = () => {
    const waitAt = new Map<number, number>();
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
      if (!waitAt.has(piece)) waitAt.set(piece, frameWait.get(frame)!);
      if (!ports.has(socket)) ports.set(socket, socket.remotePort);
      const port = ports.get(socket)!;
      if (!at.has(port)) at.set(port, new Map());
      at.get(port)!.set(piece, time);
    }
    writes.length = 0;
    frameWait.clear();
    return { at, waitAt };
  };
  // The service's thread's garbage collection pauses since the last call (count, total, longest ms).
  const gc: Gc = { count: 0, total: 0, longest: 0, pauses: [] };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      Object.assign(gc, { count: gc.count + 1, total: gc.total + e.duration, longest: Math.max(gc.longest, e.duration) });
      gc.pauses.push([performance.timeOrigin + e.startTime, e.duration]);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const gcTaken = () => {
    const taken = { ...gc };
    Object.assign(gc, { count: 0, total: 0, longest: 0, pauses: [] });
    return taken;
  };
  return {
    writtenAt,
    gcTaken,
    stop: () => {
      observer.disconnect();
      Socket.prototype.write = write;
    },
  };
}

type Received = { port: number; pieces: [number, number][] };
/** A thread's collections in a stage; `pauses`: each one's start (the shared clock) and length, ms; `waits`: a client thread's wait for a core (ms so far) at each piece's first read. */
type Gc = { count: number; total: number; longest: number; pauses: [number, number][]; waits?: number[]; cpu?: number; young?: number };
const gcText = (gc: Gc | undefined) => (gc ? `${gc.count} / ${fmt(gc.total)} / ${fmt(gc.longest)}` : '-');

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

/**
 * Prints the stops of the service's thread that a client's wake makes in the middle of a fan-out
 * (docs/design.md "The sender's wake in the fan-out, and the followers' own thread (s34, follow34)"). A
 * write to a client thread that sleeps wakes it, and on 2 cores the woken thread often takes the service's
 * core: the service's next write comes late. The followers' thread is woken by the fan-out's first write (if a follower's) and then
 * reads through the fan-out; the sender's thread sleeps between pieces and is woken at the sender's place,
 * so its wake stops the fan-out for the followers written after it and never for the sender. Printed: the
 * gap to the service's next write after the sender's, after the fan-out's first write (a follower's), and
 * after any other follower's (p50 / p90 / p99 ms); and the row's ratio again with each follower's delay
 * less the gap after the sender's write on the pieces it was written after the sender (a reading, not the
 * row: it takes away the stop the bench's sender's client makes, which a sender's own device would not).
 */
function printWakeStops(writtenAt: Map<number, Map<number, number>>, sender: Received, followers: Received[]): void {
  const ports = [...writtenAt.keys()];
  const [afterSender, afterFirst, afterOthers]: number[][] = [[], [], []];
  // Each piece: when the sender was written, and how long until the service's next write.
  const senderStop = new Map<number, [number, number]>();
  for (const [produced] of sender.pieces) {
    const writes = ports.map((port) => [writtenAt.get(port)!.get(produced)!, port] as const).sort((a, b) => a[0] - b[0]);
    for (let i = 0; i + 1 < writes.length; i += 1) {
      const [at, port] = writes[i]!;
      const gap = writes[i + 1]![0] - at;
      if (port === sender.port) (afterSender.push(gap), senderStop.set(produced, [at, gap]));
      else (i === 0 ? afterFirst : afterOthers).push(gap);
    }
  }
  const spread3 = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `${fmt(percentile(sorted, 50), 3)} / ${fmt(percentile(sorted, 90))} / ${fmt(percentile(sorted, 99))}`;
  };
  const p99 = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      99,
    );
  const s99 = p99(sender.pieces.map(([produced, read]) => read - produced));
  const f99 = Math.max(...followers.map((f) => p99(f.pieces.map(([produced, read]) => read - produced))));
  const less = Math.max(
    ...followers.map((f) =>
      p99(
        f.pieces.map(([produced, read]) => {
          const stop = senderStop.get(produced);
          return read - produced - (stop && writtenAt.get(f.port)!.get(produced)! > stop[0] ? stop[1] : 0);
        }),
      ),
    ),
  );
  console.log(
    `  the service's next write (p50 / p90 / p99 ms) after the sender's ${spread3(afterSender)}, after the fan-out's first (a follower's) ${spread3(afterFirst)}, ` +
      `after another follower's ${spread3(afterOthers)}; ratio ${fmt(f99 / s99)}, less the stop after the sender's write for those written after it ${fmt(less / s99)}`,
  );
}

/**
 * Prints each watcher's slowest pieces, the sender's and the slowest follower's (the five a p99 of 500
 * looks at): where each piece's delay went (the service's write, the client's read after it), the
 * watcher's place in that piece's fan-out, how long the service's thread and the watcher's client thread
 * waited for a core around it (schedstat's run_delay between samples), and the collections that overlap
 * the piece's way (service, client thread).
 */
function printTail(written: { at: Map<number, Map<number, number>>; waitAt: Map<number, number> }, watchers: { name: string; received: Received; thread: Gc }[], service: Gc): void {
  const produced = watchers[0]!.received.pieces.map(([p]) => p);
  const ports = [...written.at.keys()];
  const overlap = (pauses: [number, number][], from: number, to: number) => {
    let ms = 0;
    for (const [start, length] of pauses) ms += Math.max(0, Math.min(to, start + length) - Math.max(from, start));
    return ms;
  };
  const step = (samples: (number | undefined)[], i: number) => (samples[i] !== undefined && samples[i - 1] !== undefined ? samples[i]! - samples[i - 1]! : NaN);
  const serviceWaits = produced.map((p) => written.waitAt.get(p));
  for (const { name, received, thread } of watchers) {
    const at = written.at.get(received.port)!;
    const order = received.pieces.map(([p, read], i) => ({ i, p, read, total: read - p })).sort((a, b) => b.total - a.total);
    const lines = order.slice(0, 5).map(({ i, p, read, total }) => {
      const mine = at.get(p)!;
      const rank = ports.filter((port) => (written.at.get(port)?.get(p) ?? Infinity) < mine).length + 1;
      const waits = thread.waits ?? [];
      return (
        `#${i} ${fmt(total)} (written +${fmt(mine - p)}, ${rank}/${ports.length}; read +${fmt(read - mine)}); ` +
        `wait service ${fmt(step(serviceWaits, i + 1))}, client before ${fmt(step(waits, i))} after ${fmt(step(waits, i + 1))}; ` +
        `gc service ${fmt(overlap(service.pauses, p, read))} client ${fmt(overlap(thread.pauses, p, read))}`
      );
    });
    console.log(`  ${name}'s slowest pieces (ms): ${lines.join(' | ')}`);
  }
}

export async function benchFollow(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-follow-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, provider: 'openai', api_key: 'sk-bench' }));
  const { followers: followersThreads, sender: senderThread } = await clientThreads(FOLLOWER_THREADS, process.env.SENDER_WITH_FOLLOWERS === '1');
  const service = await serviceClass().open({ dataDir: dir, host: '127.0.0.1', port: 0, provider: () => streamingProvider() });
  const { port } = await service.start();
  const url = `ws://127.0.0.1:${port}/ws`;
  const results: Record<string, number> = {};
  const trace = process.env.FOLLOW_SPLIT === '1' ? traceWrites() : undefined;
  try {
    for (const followers of [0, 1, 10, 100]) {
      const { conversationId } = await senderThread.run<{ conversationId: string }>({ kind: 'senderStart', url, token: TOKEN });
      // The followers spread evenly over their threads.
      const share = (thread: number) => Math.floor((followers * (thread + 1)) / FOLLOWER_THREADS) - Math.floor((followers * thread) / FOLLOWER_THREADS);
      await Promise.all(followersThreads.map((thread, i) => thread.run({ kind: 'followersStart', url, token: TOKEN, followers: share(i), conversationId })));
      await Promise.all([...new Set([senderThread, ...followersThreads])].map((thread) => thread.run({ kind: 'stageStart' })));
      trace?.gcTaken();
      const schedBefore = mainThreadSched();
      const [streamed, ...collected] = await Promise.all([
        senderThread.run<{ delays: number[]; wokeDelays: number[]; pieces: [number, number][]; port: number; gc?: Gc }>({ kind: 'senderStream', pieces: PIECES, paceMs: PACE_MS, conversationId }),
        ...followersThreads.map((thread) => thread.run<{ delays: number[][]; wokeDelays: number[][]; received: Received[]; gc?: Gc }>({ kind: 'followersCollect' })),
      ]);
      const schedAfter = mainThreadSched();
      const [serviceCpuMs, serviceWaitMs] = [schedAfter.run - schedBefore.run, schedAfter.wait - schedBefore.wait];
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
      // The issue's row: each follower's p99 over the same pieces as the sender's, the slowest of them.
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
      // Beside the row: the same ratio with each piece stamped at its thread's wake (the reading order in one thread taken out).
      const p99Of = (values: number[]) =>
        percentile(
          [...values].sort((a, b) => a - b),
          99,
        );
      const [wokeS99, wokeF99] = [p99Of(streamed.wokeDelays), Math.max(...collected.flatMap((c) => c.wokeDelays).map(p99Of))];
      console.log(
        `  stamped at the first read of the thread's wake (a hundred sockets' reading order in one thread taken out, both sides alike): sender p99 ${fmt(wokeS99)} ms, slowest follower p99 ${fmt(wokeF99)} ms, ratio ${fmt(wokeF99 / wokeS99)}`,
      );
      // The clients' threads' collections in the stage: the bench's own, printed beside its row.
      const ownThread = streamed.gc ?? collected[0]!.gc;
      console.log(
        `  the clients' threads in the stage (their heaps ${process.env.FOLLOW_CLIENT_HEAP ? `FOLLOW_CLIENT_HEAP=${process.env.FOLLOW_CLIENT_HEAP}` : 'collected before it, young generations of 16 MB'}): ` +
          `gc (count / total / longest ms) the sender's ${gcText(ownThread)}, the followers' ${collected.map((c) => gcText(c.gc)).join('; ')}; ` +
          `young generation grown ${fmt(ownThread?.young ?? NaN)} / ${collected.map((c) => fmt(c.gc?.young ?? NaN)).join(', ')} MB`,
      );
      if (trace) {
        const serviceGc = trace.gcTaken();
        const written = trace.writtenAt();
        printSplit(written.at, streamed, followed.received);
        printWakeStops(written.at, streamed, followed.received);
        // FOLLOW_DUMP=<path>: this stage's pieces (each watcher's [produced, read], each port's writes, each thread's collections) as JSON, to read at leisure.
        if (process.env.FOLLOW_DUMP)
          await writeFile(
            `${process.env.FOLLOW_DUMP}-${followers}.json`,
            JSON.stringify({
              sender: streamed,
              followers: followed.received,
              written: [...written.at].map(([port, at]) => [port, [...at]]),
              serviceGc: serviceGc.pauses,
              followersGc: collected[0]!.gc?.pauses,
              senderGc: streamed.gc?.pauses,
            }),
          );
        const worst = each.reduce((a, b, i) => (percentile(b, 99) > percentile(each[a]!, 99) ? i : a), 0);
        printTail(
          written,
          [
            { name: 'sender', received: streamed, thread: (streamed.gc ?? collected[0]!.gc)! },
            { name: `slowest follower (#${worst + 1} to follow)`, received: followed.received[worst]!, thread: collected[0]!.gc! },
          ],
          serviceGc,
        );
        const p99s = each.map((mine) => percentile(mine, 99)).sort((a, b) => a - b);
        console.log(
          `  followers' p99s min / median / max ${fmt(p99s[0]!)} / ${fmt(percentile(p99s, 50))} / ${fmt(p99s[p99s.length - 1]!)} ms; ` +
            `the service's thread's CPU ${fmt(serviceCpuMs, 0)} ms, its wait for a core ${fmt(serviceWaitMs, 0)} ms; the clients' threads' CPU: the sender's ${fmt(streamed.gc?.cpu ?? NaN, 0)} ms, the followers' ${collected.map((c) => fmt(c.gc?.cpu ?? NaN, 0)).join(', ')} ms; gc (count / total / longest ms): service ${gcText(serviceGc)}, sender's own thread ${gcText(streamed.gc)}, followers' thread(s) ${collected.map((c) => gcText(c.gc)).join('; ')}`,
        );
      }
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
