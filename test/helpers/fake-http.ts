/**
 * What the fake HTTP servers of the tests share (fake-openai.ts, fake-anthropic.ts; usable by any other
 * scripted test server, e.g. webhook-receiver.ts):
 *
 * - building blocks: `listenOnLoopback` (a server on 127.0.0.1 whose close() also ends every open
 *   connection, hanging ones included), `createWatchers` (waitFor/notify), `onBody`, `sendJson`/`sendRaw`;
 * - `startFakeServer`: a scripted fake on those blocks that records every request, answers from a
 *   first-in-first-out step queue (or a default), and knows the steps every fake vendor shares:
 *   delays, HTTP errors, hangs, resets, raw garbage, and paced SSE streams.
 *
 * The vendor fakes keep their wire formats (paths, auth, bodies, events) to themselves.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

// ---------------------------------------------------------------------------------------------------
// Building blocks

export interface LoopbackServer {
  readonly port: number;
  /** Stops the server and destroys every connection, hanging ones included. Closing twice is harmless. */
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1 at a free port (or `port`, to come back where a closed server was), tracking
 * connections so that close() does not wait for them.
 */
export async function listenOnLoopback(server: http.Server | https.Server, port = 0): Promise<LoopbackServer> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  let stopped: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      if (!stopped) {
        stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
      }
      return stopped;
    },
  };
}

export interface Watchers {
  /** Re-checks every pending waitFor. */
  notify(): void;
  /** Resolves once `predicate` holds (checked now and on every notify), rejects with `timeoutMessage()` after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs: number, timeoutMessage: () => string): Promise<void>;
}

export function createWatchers(): Watchers {
  const watchers = new Set<() => void>();
  return {
    notify: () => [...watchers].forEach((watch) => watch()),
    waitFor(predicate, timeoutMs, timeoutMessage) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!predicate()) return;
          done();
          resolve();
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(timeoutMessage()));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          watchers.delete(check);
        };
        watchers.add(check);
        check();
      });
    },
  };
}

/** Calls `then` with the whole request body as text once it has arrived. */
export function onBody(req: http.IncomingMessage, then: (text: string) => unknown): void {
  onBodyBytes(req, (bytes) => then(bytes.toString('utf8')));
}

/** Calls `then` with the whole request body as bytes once it has arrived (an encrypted push body). */
export function onBodyBytes(req: http.IncomingMessage, then: (bytes: Buffer) => unknown): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => void then(Buffer.concat(chunks)));
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendRaw(res, status, 'application/json', JSON.stringify(body), headers);
}

export function sendRaw(res: http.ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** `text` cut into `pieces` parts of about equal length (by code point); fewer only when it is shorter. */
export function split(text: string, pieces: number): string[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const count = Math.max(1, Math.min(Math.floor(pieces), chars.length));
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    parts.push(chars.slice(Math.round((i * chars.length) / count), Math.round(((i + 1) * chars.length) / count)).join(''));
  }
  return parts;
}

export function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

// ---------------------------------------------------------------------------------------------------
// Scripted fakes

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/v1/messages`. */
  path: string;
  /** Lower-cased header names, as Node gives them. */
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body; the raw text when not JSON; undefined when empty. */
  body: any;
  /** Date.now() when the request arrived. */
  receivedAt: number;
  /** The client closed the connection before the answer was complete (e.g. it cancelled). */
  aborted: boolean;
  /** Which of the server's connections it came on: 1 for the first the server accepted, and so on. */
  connection: number;
}

export interface Timing {
  /** Wait this long before answering at all. */
  delayMs?: number;
}

/** An HTTP error. The default body is the vendor's error shape for the status (see the fake's errorBody). */
export interface FakeError extends Timing {
  status: number;
  /** An object is sent as JSON, a string as is. */
  body?: unknown;
  /** Sent as the Retry-After header. */
  retryAfter?: number | string;
  headers?: Record<string, string>;
}

/** Never answers (the server still closes promptly). */
export interface FakeHang extends Timing {
  hang: true;
}

/** Status 200 with garbage: unparsable data when streaming, else a body that is not JSON. A string is sent raw instead. */
export interface FakeMalformed extends Timing {
  malformed: true | string;
}

/** Destroys the connection without answering. */
export interface FakeReset extends Timing {
  reset: true;
}

/** The steps every fake answers the same way; a vendor adds its own reply step. */
export type CommonStep = FakeError | FakeHang | FakeMalformed | FakeReset;

/** A step, or a function choosing one from the request (e.g. to answer what a tool result says). */
export type StepSource<Step> = Step | ((request: RecordedRequest) => Step);

export interface FakeServer<Step> {
  /** The base URL to give the provider. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in order of arrival (but those the spec sets `aside`). */
  readonly requests: RecordedRequest[];
  /** The requests set aside (FakeServerSpec.aside), e.g. a local server's own endpoints asked beside the API, and every OPTIONS (a provider's connection opened ahead). */
  readonly asides: RecordedRequest[];
  /** How many connections the server has accepted (TLS ones once their handshake is over). */
  readonly connections: number;
  /** Queues answers for the next completion requests, first in first out. */
  script(...steps: StepSource<Step>[]): void;
  /** The answer used when the queue is empty (initially the echo). */
  setDefault(step: StepSource<Step>): void;
  /** Scripted steps not used yet. */
  pending(): number;
  /** Resolves once `predicate` holds (checked on every request and abort), rejects after `timeoutMs` (default 5000). */
  waitFor(predicate: (requests: RecordedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Stops the server and destroys every connection, hanging ones included. */
  close(): Promise<void>;
}

/** One request and its answer. */
export interface Exchange {
  readonly record: RecordedRequest;
  readonly res: http.ServerResponse;
  /** Destroys the connection on purpose (not counted as the client aborting). */
  reset(): void;
}

/** What a vendor fake's handler gets to answer with. */
export interface FakeKit<Step> {
  /** The server is closed: nothing more is to be sent. */
  readonly closed: boolean;
  /** Resolves after `ms`, or never if the server closes first. */
  later(ms: number): Promise<void>;
  /** The next scripted step for this request, else the default. */
  nextStep(record: RecordedRequest): Step;
  /**
   * Waits the step's delay, then answers it if it is a step every fake shares (an error, a hang, a
   * reset, a raw malformed string). Returns what is left for the vendor to answer: its reply, or
   * `malformed: true` (garbage in its own format); undefined when nothing is.
   */
  answerCommon<Reply extends Timing>(
    step: Reply | CommonStep,
    exchange: Exchange,
    how: { streaming: boolean; errorBody(status: number): unknown; errorHeaders?(): Record<string, string> },
  ): Promise<Reply | (FakeMalformed & { malformed: true }) | undefined>;
  /**
   * Answers 200 with an SSE stream: `events` (already formatted), `delayMs` apart, then `end`. Before
   * each event, and once after the last, `control(index)` may stop it: 'hang' goes silent, 'reset'
   * destroys the connection, `{ end }` ends the stream with that text at once. `hold(index)` may answer
   * a promise the stream waits for before that event (a test's handshake with what the client shows).
   */
  stream(
    exchange: Exchange,
    events: readonly string[],
    options: {
      delayMs?: number;
      headers?: Record<string, string>;
      end?: string;
      control?(index: number): 'hang' | 'reset' | { end: string } | undefined;
      hold?(index: number): Promise<unknown> | undefined;
    },
  ): Promise<void>;
}

export interface FakeServerSpec<Step> {
  /** Names the fake in its errors, e.g. `fake-openai`. */
  name: string;
  /** The step when nothing is scripted. */
  fallback: StepSource<Step>;
  /** The base URL from the server's origin (`http://127.0.0.1:<port>`). */
  baseUrl(origin: string): string;
  /** Answers one request (a rejection destroys the connection). */
  handle(exchange: Exchange, kit: FakeKit<Step>): Promise<void>;
  /** Listen on this port (default: a free one). */
  port?: number;
  /** Requests recorded in `asides` instead of `requests` (by path), so tests counting API calls see only them. */
  aside?: (path: string) => boolean;
  /** Serve HTTPS with this key and certificate (test/helpers/self-signed.ts) instead of HTTP. */
  tls?: { key: Buffer; cert: Buffer };
}

export async function startFakeServer<Step>(spec: FakeServerSpec<Step>): Promise<FakeServer<Step>> {
  const requests: RecordedRequest[] = [];
  const asides: RecordedRequest[] = [];
  const queue: StepSource<Step>[] = [];
  let fallback = spec.fallback;
  let closed = false;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const watchers = createWatchers();

  const later = (ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0) return resolve();
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const kit: FakeKit<Step> = {
    get closed() {
      return closed;
    },
    later,
    nextStep(record) {
      const source = queue.length > 0 ? queue.shift()! : fallback;
      return typeof source === 'function' ? (source as (request: RecordedRequest) => Step)(record) : source;
    },
    async answerCommon(step, exchange, how) {
      await later(step.delayMs ?? 0);
      const { res } = exchange;
      if (closed || res.destroyed) return undefined;
      const common = step as CommonStep;
      if ('status' in common) {
        const headers: Record<string, string> = { ...how.errorHeaders?.(), ...common.headers };
        if (common.retryAfter !== undefined) headers['retry-after'] = String(common.retryAfter);
        const body = common.body === undefined ? how.errorBody(common.status) : common.body;
        if (typeof body === 'string') sendRaw(res, common.status, 'text/plain; charset=utf-8', body, headers);
        else sendJson(res, common.status, body, headers);
        return undefined;
      }
      if ('hang' in common) return undefined;
      if ('reset' in common) return void exchange.reset();
      if ('malformed' in common && typeof common.malformed === 'string') {
        return void sendRaw(res, 200, how.streaming ? 'text/event-stream' : 'application/json', common.malformed);
      }
      return step as Exclude<typeof step, CommonStep> | (FakeMalformed & { malformed: true });
    },
    async stream(exchange, events, options) {
      const { res } = exchange;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...options.headers });
      res.flushHeaders();
      for (let sent = 0; sent <= events.length; sent++) {
        const action = options.control?.(sent);
        if (action === 'hang') return;
        if (action === 'reset') return exchange.reset();
        if (action) return void res.end(action.end);
        if (sent === events.length) break;
        if (sent > 0) await later(options.delayMs ?? 0);
        await options.hold?.(sent);
        if (closed || res.destroyed) return;
        // Waiting for the write lets a reset or hang that follows happen after the event left.
        await new Promise<void>((resolve) => res.write(events[sent], () => resolve()));
      }
      if (options.end === undefined) res.end();
      else res.end(options.end);
    },
  };

  const connectionOf = new WeakMap<object, number>();
  let connections = 0;
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    onBody(req, (text) => {
      let body: unknown = undefined;
      if (text) {
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
      }
      const record: RecordedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        receivedAt: Date.now(),
        aborted: false,
        connection: connectionOf.get(req.socket) ?? 0,
      };
      let selfReset = false;
      const exchange: Exchange = {
        record,
        res,
        reset() {
          selfReset = true;
          res.socket?.destroy();
          res.destroy();
        },
      };
      res.on('close', () => {
        if (!res.writableFinished && !selfReset && !record.aborted) {
          record.aborted = true;
          watchers.notify();
        }
      });
      (record.method === 'OPTIONS' || spec.aside?.(record.path.split('?')[0]) ? asides : requests).push(record);
      watchers.notify();
      spec.handle(exchange, kit).catch(() => res.destroy());
    });
  };
  const server = spec.tls ? https.createServer(spec.tls, handler) : http.createServer(handler);
  server.on(spec.tls ? 'secureConnection' : 'connection', (socket: object) => connectionOf.set(socket, ++connections));
  const loopback = await listenOnLoopback(server, spec.port);
  const { port } = loopback;

  return {
    url: spec.baseUrl(`${spec.tls ? 'https' : 'http'}://127.0.0.1:${port}`),
    port,
    requests,
    asides,
    get connections() {
      return connections;
    },
    script: (...steps) => void queue.push(...steps),
    setDefault: (step) => void (fallback = step),
    pending: () => queue.length,
    waitFor: (predicate, timeoutMs = 5000) =>
      watchers.waitFor(
        () => predicate(requests),
        timeoutMs,
        () => `${spec.name}: condition not met within ${timeoutMs} ms (${requests.length} requests seen)`,
      ),
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await loopback.close();
    },
  };
}
