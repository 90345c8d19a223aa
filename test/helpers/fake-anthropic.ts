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
 * message_delta (stop_reason, usage) and message_stop. The `...AfterChunks` options count content
 * chunks, the content_block_delta events: `hangAfterChunks: 2` sends everything before the third, then
 * stops (the same knob, counted the same way, as fake-openai.ts's).
 */
import { isServiceNote } from './service-note';
import { countWords, sendJson, sendRaw, split, startFakeServer } from './fake-http';
import type { Exchange, FakeError, FakeHang, FakeKit, FakeMalformed, FakeReset, FakeServer, StepSource, Timing } from './fake-http';

export type { FakeError, FakeHang, FakeMalformed, FakeReset, RecordedRequest } from './fake-http';

export interface FakeToolUse {
  id?: string;
  name: string;
  /** An object is sent as JSON; a string is sent as is (so malformed JSON can be tested). */
  input: Record<string, unknown> | string;
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
  usage?: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
  /** Streaming: go silent (never finish) after this many content chunks (deltas). Not streaming: never answer. */
  hangAfterChunks?: number;
  /** Streaming: destroy the connection after this many content chunks. Not streaming: destroy it at once. */
  resetAfterChunks?: number;
  /** Streaming: after this many content chunks send `event: error` with this error and end the stream. */
  errorAfterChunks?: number;
  /** The error of errorAfterChunks. Default `{ type: 'overloaded_error', message: 'Overloaded' }`. */
  streamError?: { type: string; message: string };
}

export type FakeStep = FakeReply | FakeError | FakeHang | FakeMalformed | FakeReset;
/** A step, or a function choosing one from the request (e.g. to answer what a tool result says). */
export type FakeStepSource = StepSource<FakeStep>;

export interface FakeAnthropicOptions {
  /** When set, every /v1 request must carry `x-api-key: <apiKey>`, else 401. */
  apiKey?: string;
  /** What GET /v1/models lists, in this order. Default ['claude-fake-2', 'claude-fake-1']. */
  models?: string[];
  /** The most models one page of GET /v1/models holds, whatever `limit` asks (to exercise paging). Default 1000. */
  modelsPageSize?: number;
  /** Serve HTTPS with this key and certificate (test/helpers/self-signed.ts), as Anthropic's own host does. */
  tls?: { key: Buffer; cert: Buffer };
}

/** Default answers are Anthropic's error shape for the status; answers carry a `request-id` header. */
export interface FakeAnthropic extends FakeServer<FakeStep> {
  /** Base URL as Anthropic's SDK wants it (no /v1), e.g. `http://127.0.0.1:43123`. */
  readonly url: string;
}

const echo: FakeStepSource = (request) => ({ text: `echo: ${lastUserText(request.body)}` });

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const models = options.models ?? ['claude-fake-2', 'claude-fake-1'];
  let idCounter = 0;

  async function handle(exchange: Exchange, kit: FakeKit<FakeStep>): Promise<void> {
    const { record, res } = exchange;
    const [path, query = ''] = record.path.split('?');
    if (path.startsWith('/v1/')) {
      if (options.apiKey !== undefined && record.headers['x-api-key'] !== options.apiKey) {
        return sendJson(res, 401, errorBody(401));
      }
      if (!record.headers['anthropic-version']) {
        return sendJson(res, 400, anthropicError('invalid_request_error', 'anthropic-version: header is required'));
      }
    }
    if (record.method === 'GET' && path === '/v1/models') return listModels(exchange, new URLSearchParams(query));
    if (record.method === 'POST' && path === '/v1/messages') {
      const problem = invalidRequest(record.body);
      if (problem) return sendJson(res, 400, anthropicError('invalid_request_error', problem));
      return answer(kit.nextStep(record), exchange, kit);
    }
    return sendJson(res, 404, anthropicError('not_found_error', 'Not Found'));
  }

  function listModels({ res }: Exchange, query: URLSearchParams): void {
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

  async function answer(scripted: FakeStep, exchange: Exchange, kit: FakeKit<FakeStep>): Promise<void> {
    const { record, res } = exchange;
    const request = record.body as { stream?: boolean; model?: string };
    const streaming = request.stream === true;
    const step = await kit.answerCommon(scripted, exchange, {
      streaming,
      errorBody,
      errorHeaders: () => ({ 'request-id': `req_fake_${++idCounter}` }),
    });
    if (!step) return;
    if ('malformed' in step) {
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
      if (step.hangAfterChunks !== undefined) return;
      if (step.resetAfterChunks !== undefined) return exchange.reset();
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

    let deltas = 0;
    return kit.stream(
      exchange,
      events.map((next) => sse(next.event, next.data)),
      {
        delayMs: step.chunkDelayMs,
        headers: { 'request-id': `req_fake_${idCounter}` },
        // The `...AfterChunks` options count content_block_delta events.
        control(sent) {
          if (events[sent]?.event !== 'content_block_delta') return undefined;
          if (step.hangAfterChunks === deltas) return 'hang';
          if (step.resetAfterChunks === deltas) return 'reset';
          if (step.errorAfterChunks === deltas) {
            const error = step.streamError ?? { type: 'overloaded_error', message: 'Overloaded' };
            return { end: sse('error', { type: 'error', error }) };
          }
          deltas++;
          return undefined;
        },
      },
    );
  }

  return startFakeServer<FakeStep>({ name: 'fake-anthropic', fallback: echo, baseUrl: (origin) => origin, handle, tls: options.tls });
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
  const marked = [system, (body as { tools?: unknown }).tools, ...messages.map((m) => (m as { content?: unknown }).content)]
    .flatMap((blocks) => (Array.isArray(blocks) ? blocks : []))
    .filter((block) => typeof block === 'object' && block !== null && 'cache_control' in block).length;
  if (marked > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${marked}.`;
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

function fullUsage(usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number }) {
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

/** The text blocks of the last user message (tool results are not text; the service's note of the turn is not the user's). */
function lastUserText(body: unknown): string {
  const messages = (body as { messages?: { role?: string; content?: unknown }[] } | undefined)?.messages ?? [];
  const last = [...messages].reverse().find((m) => m?.role === 'user' && !isServiceNote(m.content));
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  if (Array.isArray(last.content)) {
    return last.content.map((block: { type?: unknown; text?: unknown }) => (block?.type === 'text' && typeof block.text === 'string' && !isServiceNote(block.text) ? block.text : '')).join('');
  }
  return '';
}
