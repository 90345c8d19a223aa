/**
 * A fake Anthropic provider: a real HTTP server on 127.0.0.1 speaking the Messages API (SSE streaming
 * included) and GET /v1/models. Tests script what each POST /v1/messages answers; with nothing
 * scripted it echoes the text of the last user message (`echo: <text>`).
 *
 *   const fake = await startFakeAnthropic();
 *   fake.script({ text: 'hello', chunks: 3 }, { status: 429, retryAfter: 1 }, { tool_uses: [{ name: 'read', input: { path: 'a' } }] });
 *   ... base_url: fake.url ...
 *   await fake.close();
 *
 * A streamed answer is, in order: message_start, ping, then per content block (text first, then each
 * tool_use) content_block_start, its content_block_delta events, content_block_stop; then
 * message_delta (stop_reason, usage) and message_stop. The `...AfterDeltas` options count
 * content_block_delta events: `hangAfterDeltas: 2` sends everything before the third delta, then stops.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

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
}

export interface FakeToolUse {
  id?: string;
  name: string;
  /** An object is sent as JSON; a string is sent as is (so malformed JSON can be tested). */
  input: Record<string, unknown> | string;
}

interface Timing {
  /** Wait this long before answering at all. */
  delayMs?: number;
}

/** A successful answer: text, tool_use blocks, or both. */
export interface FakeReply extends Timing {
  text?: string;
  tool_uses?: FakeToolUse[];
  /** Streaming: the text, and each tool_use's JSON input, are split into this many deltas. Default 3. */
  chunks?: number;
  /** Streaming: wait between two SSE events. */
  chunkDelayMs?: number;
  /** Default 'tool_use' when there are tool uses, else 'end_turn'. */
  stop_reason?: string;
  usage?: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number };
  /** Streaming: go silent (never finish) after this many deltas. Not streaming: never answer. */
  hangAfterDeltas?: number;
  /** Streaming: destroy the connection after this many deltas. Not streaming: destroy it at once. */
  resetAfterDeltas?: number;
  /** Streaming: after this many deltas send `event: error` with this error and end the stream. */
  errorAfterDeltas?: number;
  /** The error of errorAfterDeltas. Default `{ type: 'overloaded_error', message: 'Overloaded' }`. */
  streamError?: { type: string; message: string };
}

/** An HTTP error. The default body is Anthropic's error shape for the status. */
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

/** Status 200 with garbage: an event whose data is not JSON when streaming, else a body that is not JSON. A string is sent raw instead. */
export interface FakeMalformed extends Timing {
  malformed: true | string;
}

/** Destroys the connection without answering. */
export interface FakeReset extends Timing {
  reset: true;
}

export type FakeStep = FakeReply | FakeError | FakeHang | FakeMalformed | FakeReset;
/** A step, or a function choosing one from the request (e.g. to answer what a tool result says). */
export type FakeStepSource = FakeStep | ((request: RecordedRequest) => FakeStep);

export interface FakeAnthropicOptions {
  /** When set, every /v1 request must carry `x-api-key: <apiKey>`, else 401. */
  apiKey?: string;
  /** What GET /v1/models lists, in this order. Default ['claude-fake-2', 'claude-fake-1']. */
  models?: string[];
  /** The most models one page of GET /v1/models holds, whatever `limit` asks (to exercise paging). Default 1000. */
  modelsPageSize?: number;
}

export interface FakeAnthropic {
  /** Base URL as Anthropic's SDK wants it (no /v1), e.g. `http://127.0.0.1:43123`. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in order of arrival. */
  readonly requests: RecordedRequest[];
  /** Queues answers for the next POST /v1/messages requests, first in first out. */
  script(...steps: FakeStepSource[]): void;
  /** The answer used when the queue is empty (initially the echo). */
  setDefault(step: FakeStepSource): void;
  /** Scripted steps not used yet. */
  pending(): number;
  /** Resolves once `predicate` holds (checked on every request and abort), rejects after `timeoutMs` (default 5000). */
  waitFor(predicate: (requests: RecordedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Stops the server and destroys every connection, hanging ones included. */
  close(): Promise<void>;
}

const echo: FakeStepSource = (request) => ({ text: `echo: ${lastUserText(request.body)}` });

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const models = options.models ?? ['claude-fake-2', 'claude-fake-1'];
  const requests: RecordedRequest[] = [];
  const queue: FakeStepSource[] = [];
  let fallback: FakeStepSource = echo;
  let closed = false;
  let idCounter = 0;
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const watchers = new Set<() => void>();
  const notify = () => [...watchers].forEach((watch) => watch());

  /** Resolves after `ms`, or never if the server closes first. */
  const later = (ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0) return resolve();
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
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
      };
      const state = { selfReset: false };
      res.on('close', () => {
        if (!res.writableFinished && !state.selfReset && !record.aborted) {
          record.aborted = true;
          notify();
        }
      });
      requests.push(record);
      notify();
      handle(record, res, state).catch(() => res.destroy());
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(record: RecordedRequest, res: http.ServerResponse, state: { selfReset: boolean }): Promise<void> {
    const [path, query = ''] = record.path.split('?');
    if (path.startsWith('/v1/')) {
      if (options.apiKey !== undefined && record.headers['x-api-key'] !== options.apiKey) {
        return sendJson(res, 401, errorBody(401));
      }
      if (!record.headers['anthropic-version']) {
        return sendJson(res, 400, anthropicError('invalid_request_error', 'anthropic-version: header is required'));
      }
    }
    if (record.method === 'GET' && path === '/v1/models') return listModels(res, new URLSearchParams(query));
    if (record.method === 'POST' && path === '/v1/messages') {
      const problem = invalidRequest(record.body);
      if (problem) return sendJson(res, 400, anthropicError('invalid_request_error', problem));
      const source = queue.length > 0 ? queue.shift()! : fallback;
      const step = typeof source === 'function' ? source(record) : source;
      return answer(step, record, res, state);
    }
    return sendJson(res, 404, anthropicError('not_found_error', 'Not Found'));
  }

  function listModels(res: http.ServerResponse, query: URLSearchParams): void {
    const limit = Math.min(Number(query.get('limit') ?? 20) || 20, 1000, options.modelsPageSize ?? 1000);
    const after = query.get('after_id');
    const start = after ? models.indexOf(after) + 1 : 0;
    const page = models.slice(start, start + limit);
    sendJson(res, 200, {
      data: page.map((id) => ({ type: 'model', id, display_name: id.replace(/-/g, ' '), created_at: '2025-01-01T00:00:00Z' })),
      has_more: start + limit < models.length,
      first_id: page[0] ?? null,
      last_id: page[page.length - 1] ?? null,
    });
  }

  async function answer(step: FakeStep, record: RecordedRequest, res: http.ServerResponse, state: { selfReset: boolean }): Promise<void> {
    await later(step.delayMs ?? 0);
    if (closed || res.destroyed) return;
    const request = record.body as { stream?: boolean; model?: string };
    const streaming = request.stream === true;
    const reset = () => {
      state.selfReset = true;
      res.socket?.destroy();
      res.destroy();
    };

    if ('status' in step) {
      const headers: Record<string, string> = { 'request-id': `req_fake_${++idCounter}`, ...step.headers };
      if (step.retryAfter !== undefined) headers['retry-after'] = String(step.retryAfter);
      const body = step.body === undefined ? errorBody(step.status) : step.body;
      return typeof body === 'string' ? sendRaw(res, step.status, 'text/plain; charset=utf-8', body, headers) : sendJson(res, step.status, body, headers);
    }
    if ('hang' in step) return;
    if ('reset' in step) return reset();
    if ('malformed' in step) {
      if (typeof step.malformed === 'string') return sendRaw(res, 200, streaming ? 'text/event-stream' : 'application/json', step.malformed);
      if (!streaming) return sendRaw(res, 200, 'application/json', '{"id":"msg_broken","type":"message","content":[{"type":"te');
      const start = { type: 'message_start', message: messageShell('msg_broken', request.model, 1) };
      return sendRaw(res, 200, 'text/event-stream', `event: message_start\ndata: ${JSON.stringify(start)}\n\nevent: content_block_delta\ndata: this is not json\n\n`);
    }

    const id = `msg_fake_${++idCounter}`;
    const model = typeof request.model === 'string' ? request.model : 'claude-fake';
    const text = step.text ?? (step.tool_uses ? '' : 'ok');
    const uses = (step.tool_uses ?? []).map((use) => ({
      id: use.id ?? `toolu_fake_${++idCounter}`,
      name: use.name,
      json: typeof use.input === 'string' ? use.input : JSON.stringify(use.input),
    }));
    const stopReason = step.stop_reason ?? (uses.length > 0 ? 'tool_use' : 'end_turn');
    const usage = step.usage ?? { input_tokens: countWords(JSON.stringify(request)), output_tokens: countWords(text) + uses.length };

    if (!streaming) {
      if (step.hangAfterDeltas !== undefined) return;
      if (step.resetAfterDeltas !== undefined) return reset();
      const content: unknown[] = [];
      if (text !== '') content.push({ type: 'text', text, citations: null });
      for (const use of uses) {
        // A string that is not JSON cannot be sent as an object; it goes as a string (an odd server).
        let input: unknown = use.json;
        try {
          input = JSON.parse(use.json);
        } catch {
          // kept as the string
        }
        content.push({ type: 'tool_use', id: use.id, name: use.name, input });
      }
      return sendJson(res, 200, { ...messageShell(id, model, 0), content, stop_reason: stopReason, usage: fullUsage(usage) });
    }

    const pieces = step.chunks ?? 3;
    const events: { event: string; data: unknown }[] = [];
    const add = (data: { type: string; [field: string]: unknown }) => events.push({ event: data.type, data });
    add({ type: 'message_start', message: { ...messageShell(id, model, 1), usage: fullUsage({ ...usage, output_tokens: 1 }) } });
    events.push({ event: 'ping', data: { type: 'ping' } });
    let index = 0;
    if (text !== '') {
      add({ type: 'content_block_start', index, content_block: { type: 'text', text: '', citations: null } });
      for (const piece of split(text, pieces)) add({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      add({ type: 'content_block_stop', index });
      index++;
    }
    for (const use of uses) {
      add({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: use.id, name: use.name, input: {} } });
      // Anthropic opens every tool input with an empty partial.
      for (const piece of ['', ...split(use.json, pieces)]) {
        add({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } });
      }
      add({ type: 'content_block_stop', index });
      index++;
    }
    add({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
    add({ type: 'message_stop' });

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': `req_fake_${idCounter}` });
    res.flushHeaders();
    let deltas = 0;
    for (let sent = 0; sent < events.length; sent++) {
      const next = events[sent];
      if (next.event === 'content_block_delta') {
        if (step.hangAfterDeltas === deltas) return;
        if (step.resetAfterDeltas === deltas) return reset();
        if (step.errorAfterDeltas === deltas) {
          const error = step.streamError ?? { type: 'overloaded_error', message: 'Overloaded' };
          return void res.end(sse('error', { type: 'error', error }));
        }
        deltas++;
      }
      if (sent > 0) await later(step.chunkDelayMs ?? 0);
      if (closed || res.destroyed) return;
      // Waiting for the write lets a reset or hang that follows happen after the event left.
      await new Promise<void>((resolve) => res.write(sse(next.event, next.data), () => resolve()));
    }
    res.end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    script: (...steps) => void queue.push(...steps),
    setDefault: (step) => void (fallback = step),
    pending: () => queue.length,
    waitFor(predicate, timeoutMs = 5000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!predicate(requests)) return;
          done();
          resolve();
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`fake-anthropic: condition not met within ${timeoutMs} ms (${requests.length} requests seen)`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          watchers.delete(check);
        };
        watchers.add(check);
        check();
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await stopped;
    },
  };
}

/** What the real API rejects first, for the mistakes a provider could make in the body's shape. */
function invalidRequest(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return 'There was an issue with your request body: it is not valid JSON.';
  const { model, max_tokens, messages, system } = body as Record<string, unknown>;
  if (typeof model !== 'string' || model === '') return 'model: Field required';
  if (typeof max_tokens !== 'number') return 'max_tokens: Field required';
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: Field required';
  if (system !== undefined && typeof system !== 'string' && !Array.isArray(system)) return 'system: Input should be a valid list';
  for (const [i, message] of messages.entries()) {
    const role = (message as { role?: unknown })?.role;
    if (role !== 'user' && role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const content = (message as { content?: unknown }).content;
    if (typeof content === 'string' ? content.trim() === '' : !Array.isArray(content) || content.length === 0) {
      return `messages.${i}: all messages must have non-empty content`;
    }
  }
  if ((messages[0] as { role: string }).role !== 'user') return 'messages: first message must use the "user" role';
  return undefined;
}

function messageShell(id: string, model: unknown, outputTokens: number) {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: typeof model === 'string' ? model : 'claude-fake',
    content: [] as unknown[],
    stop_reason: null as string | null,
    stop_sequence: null,
    usage: fullUsage({ input_tokens: 0, output_tokens: outputTokens }),
  };
}

function fullUsage(usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number }) {
  return { cache_creation_input_tokens: 0, cache_read_input_tokens: 0, ...usage, service_tier: 'standard' };
}

function anthropicError(type: string, message: string) {
  return { type: 'error', error: { type, message } };
}

/** Anthropic's error body for a status. */
function errorBody(status: number) {
  switch (status) {
    case 400:
      return anthropicError('invalid_request_error', 'Invalid request.');
    case 401:
      return anthropicError('authentication_error', 'invalid x-api-key');
    case 403:
      return anthropicError('permission_error', 'Your API key does not have permission to use the specified resource.');
    case 404:
      return anthropicError('not_found_error', 'model: claude-fake-missing');
    case 413:
      return anthropicError('request_too_large', 'Request exceeds the maximum allowed number of bytes.');
    case 429:
      return anthropicError('rate_limit_error', 'This request would exceed the rate limit for your organization.');
    case 529:
      return anthropicError('overloaded_error', 'Overloaded');
    default:
      return status >= 500 ? anthropicError('api_error', 'Internal server error') : anthropicError('invalid_request_error', `Fake error ${status}.`);
  }
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendRaw(res, status, 'application/json', JSON.stringify(body), headers);
}

function sendRaw(res: http.ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** `text` cut into `pieces` parts of about equal length (by code point); fewer only when it is shorter. */
function split(text: string, pieces: number): string[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const count = Math.max(1, Math.min(Math.floor(pieces), chars.length));
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    parts.push(chars.slice(Math.round((i * chars.length) / count), Math.round(((i + 1) * chars.length) / count)).join(''));
  }
  return parts;
}

/** The text blocks of the last user message (tool results are not text). */
function lastUserText(body: unknown): string {
  const messages = (body as { messages?: { role?: string; content?: unknown }[] } | undefined)?.messages ?? [];
  const last = [...messages].reverse().find((m) => m?.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  if (Array.isArray(last.content)) {
    return last.content.map((block: { type?: unknown; text?: unknown }) => (block?.type === 'text' && typeof block.text === 'string' ? block.text : '')).join('');
  }
  return '';
}

function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}
