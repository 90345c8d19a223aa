/**
 * A fake OpenAI-compatible provider: a real HTTP server on 127.0.0.1 speaking the chat completions API
 * (streaming included) and GET /v1/models. Tests script what each POST /v1/chat/completions answers;
 * with nothing scripted it echoes the last user message (`echo: <text>`).
 *
 *   const fake = await startFakeOpenAI();
 *   fake.script({ text: 'hello', chunks: 3 }, { status: 429, retryAfter: 1 }, { tool_calls: [{ name: 'read', arguments: { path: 'a' } }] });
 *   ... base_url: fake.url ...
 *   await fake.close();
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
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

export interface FakeToolCall {
  id?: string;
  name: string;
  /** An object is sent as JSON; a string is sent as is (so malformed JSON can be tested). */
  arguments: Record<string, unknown> | string;
}

interface Timing {
  /** Wait this long before answering at all. */
  delayMs?: number;
}

/** A successful answer: text, tool calls, or both. */
export interface FakeReply extends Timing {
  text?: string;
  tool_calls?: FakeToolCall[];
  /** Streaming: the text, and each tool call's arguments, are split into this many pieces. Default 3. */
  chunks?: number;
  /** Streaming: wait between two SSE events. */
  chunkDelayMs?: number;
  /** Default 'tool_calls' when there are tool calls, else 'stop'. */
  finish_reason?: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Streaming: after this many SSE events, go silent and never finish. Not streaming: never answer. */
  hangAfterChunks?: number;
  /** Streaming: after this many SSE events, destroy the connection. Not streaming: destroy it at once. */
  resetAfterChunks?: number;
}

/** An HTTP error. The default body is OpenAI's error shape (a 401 quotes part of the presented key, as OpenAI does). */
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

/** Status 200 with garbage: unparsable SSE data when streaming, else a body that is not JSON. A string is sent raw instead. */
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

export interface FakeOpenAIOptions {
  /** When set, every /v1 request must carry `Authorization: Bearer <apiKey>`, else 401. */
  apiKey?: string;
  /** What GET /v1/models lists. Default ['fake-model', 'fake-model-large']. */
  models?: string[];
}

export interface FakeOpenAI {
  /** Base URL including /v1, e.g. `http://127.0.0.1:43123/v1`. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in order of arrival. */
  readonly requests: RecordedRequest[];
  /** Queues answers for the next chat completions requests, first in first out. */
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

const echo: FakeStepSource = (request) => ({ text: `echo: ${lastUserMessage(request.body)}` });

export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const models = options.models ?? ['fake-model', 'fake-model-large'];
  const requests: RecordedRequest[] = [];
  const queue: FakeStepSource[] = [];
  let fallback: FakeStepSource = echo;
  let closed = false;
  let callCounter = 0;
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
    const path = record.path.split('?')[0];
    if (options.apiKey !== undefined && path.startsWith('/v1/')) {
      const presented = /^Bearer\s+(.*)$/i.exec(String(record.headers.authorization ?? ''))?.[1];
      if (presented !== options.apiKey) return sendJson(res, 401, errorBody(401, presented));
    }
    if (record.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'fake' })),
      });
    }
    if (record.method === 'POST' && path === '/v1/chat/completions') {
      if (typeof record.body !== 'object' || record.body === null) {
        return sendJson(res, 400, { error: { message: 'We could not parse the JSON body of your request.', type: 'invalid_request_error', param: null, code: null } });
      }
      const source = queue.length > 0 ? queue.shift()! : fallback;
      const step = typeof source === 'function' ? source(record) : source;
      return answer(step, record, res, state);
    }
    return sendJson(res, 404, { error: { message: `Unknown request URL: ${record.method} ${path}.`, type: 'invalid_request_error', param: null, code: 'unknown_url' } });
  }

  async function answer(step: FakeStep, record: RecordedRequest, res: http.ServerResponse, state: { selfReset: boolean }): Promise<void> {
    await later(step.delayMs ?? 0);
    if (closed || res.destroyed) return;
    const request = record.body as { stream?: boolean; model?: string; stream_options?: { include_usage?: boolean } };
    const streaming = request.stream === true;
    const reset = () => {
      state.selfReset = true;
      res.socket?.destroy();
      res.destroy();
    };

    if ('status' in step) {
      const headers: Record<string, string> = { ...step.headers };
      if (step.retryAfter !== undefined) headers['retry-after'] = String(step.retryAfter);
      const presented = /^Bearer\s+(.*)$/i.exec(String(record.headers.authorization ?? ''))?.[1];
      const body = step.body === undefined ? errorBody(step.status, presented) : step.body;
      return typeof body === 'string' ? sendRaw(res, step.status, 'text/plain; charset=utf-8', body, headers) : sendJson(res, step.status, body, headers);
    }
    if ('hang' in step) return;
    if ('reset' in step) return reset();
    if ('malformed' in step) {
      if (typeof step.malformed === 'string') return sendRaw(res, 200, streaming ? 'text/event-stream' : 'application/json', step.malformed);
      if (!streaming) return sendRaw(res, 200, 'application/json', '{"id":"chatcmpl-broken","choices":[{"index":0,"mess');
      return sendRaw(res, 200, 'text/event-stream', 'data: {"id":"chatcmpl-broken","choices":[{"index":0,"delta":{"content":"par\n\ndata: this is not json\n\n');
    }

    const id = `chatcmpl-fake-${++callCounter}`;
    const model = typeof request.model === 'string' ? request.model : 'fake-model';
    const created = Math.floor(Date.now() / 1000);
    const text = step.text ?? (step.tool_calls ? '' : 'ok');
    const calls = (step.tool_calls ?? []).map((call) => ({
      id: call.id ?? `call_fake_${++callCounter}`,
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    }));
    const finishReason = step.finish_reason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
    const usage = step.usage ?? { prompt_tokens: countWords(JSON.stringify(request)), completion_tokens: countWords(text) + calls.length };

    if (!streaming) {
      if (step.hangAfterChunks !== undefined) return;
      if (step.resetAfterChunks !== undefined) return reset();
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: calls.length > 0 && text === '' ? null : text,
              refusal: null,
              ...(calls.length > 0 && {
                tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
              }),
            },
            logprobs: null,
            finish_reason: finishReason,
          },
        ],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      });
    }

    const pieces = step.chunks ?? 3;
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    const events: unknown[] = [chunk({ role: 'assistant', content: '' })];
    for (const piece of split(text, pieces)) events.push(chunk({ content: piece }));
    calls.forEach((call, index) => {
      events.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
      for (const piece of split(call.arguments, pieces)) events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    events.push(chunk({}, finishReason));
    if (request.stream_options?.include_usage) {
      events.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } });
    }

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    res.flushHeaders();
    for (let sent = 0; sent <= events.length; sent++) {
      if (step.hangAfterChunks === sent) return;
      if (step.resetAfterChunks === sent) return reset();
      if (sent === events.length) break;
      if (sent > 0) await later(step.chunkDelayMs ?? 0);
      if (closed || res.destroyed) return;
      // Waiting for the write lets a reset or hang that follows happen after the event left.
      await new Promise<void>((resolve) => res.write(`data: ${JSON.stringify(events[sent])}\n\n`, () => resolve()));
    }
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
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
          reject(new Error(`fake-openai: condition not met within ${timeoutMs} ms (${requests.length} requests seen)`));
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

/** OpenAI's error body for a status; a 401 quotes part of the presented key, as OpenAI does. */
function errorBody(status: number, presentedKey: string | undefined) {
  const error = (message: string, type: string, code: string | null) => ({ error: { message, type, param: null, code } });
  switch (status) {
    case 401:
      return presentedKey
        ? error(`Incorrect API key provided: ${maskKey(presentedKey)}. You can find your API key at https://platform.openai.com/account/api-keys.`, 'invalid_request_error', 'invalid_api_key')
        : error("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", 'invalid_request_error', null);
    case 400:
      return error('Invalid request.', 'invalid_request_error', null);
    case 403:
      return error('You are not allowed to sample from this model.', 'invalid_request_error', null);
    case 404:
      return error('The model `fake-missing` does not exist or you do not have access to it.', 'invalid_request_error', 'model_not_found');
    case 429:
      return error('Rate limit reached for requests. Please try again later.', 'requests', 'rate_limit_exceeded');
    default:
      return status >= 500
        ? error('The server had an error while processing your request. Sorry about that!', 'server_error', null)
        : error(`Fake error ${status}.`, 'invalid_request_error', null);
  }
}

function maskKey(key: string): string {
  return key.length > 12 ? `${key.slice(0, 8)}${'*'.repeat(Math.max(3, key.length - 12))}${key.slice(-4)}` : `${key.slice(0, 2)}***${key.slice(-2)}`;
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

function lastUserMessage(body: unknown): string {
  const messages = (body as { messages?: { role?: string; content?: unknown }[] } | undefined)?.messages ?? [];
  const last = [...messages].reverse().find((m) => m?.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  if (Array.isArray(last.content)) {
    return last.content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('');
  }
  return '';
}

function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}
