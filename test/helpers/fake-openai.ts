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
import { isServiceNote } from './service-note';
import { countWords, sendJson, sendRaw, split, startFakeServer } from './fake-http';
import type { Exchange, FakeError, FakeHang, FakeKit, FakeMalformed, FakeReset, FakeServer, RecordedRequest, StepSource, Timing } from './fake-http';

export type { FakeError, FakeHang, FakeMalformed, FakeReset, RecordedRequest } from './fake-http';

export interface FakeToolCall {
  id?: string;
  name: string;
  /** An object is sent as JSON; a string is sent as is (so malformed JSON can be tested). */
  arguments: Record<string, unknown> | string;
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
  /**
   * As OpenAI reports it; `prompt_tokens_details.cached_tokens` are included in prompt_tokens. Default: words
   * counted. null: none reported (as some compatible servers do).
   */
  usage?: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens: number } } | null;
  /**
   * Streaming: go silent (never finish) after this many content chunks (the pieces `chunks` splits the
   * text and each tool call into; the opening role chunk does not count). Not streaming: never answer.
   * The same knob, counted the same way, as fake-anthropic.ts's.
   */
  hangAfterChunks?: number;
  /** Streaming: destroy the connection after this many content chunks. Not streaming: destroy it at once. */
  resetAfterChunks?: number;
  /**
   * Streaming: after this many content chunks, wait for `until` before the rest (so a test can see the
   * client show part of a reply without racing a timer).
   */
  holdAfterChunks?: { chunks: number; until: Promise<unknown> };
}

export type FakeStep = FakeReply | FakeError | FakeHang | FakeMalformed | FakeReset;
/** A step, or a function choosing one from the request (e.g. to answer what a tool result says). */
export type FakeStepSource = StepSource<FakeStep>;

export interface FakeOpenAIOptions {
  /** When set, every /v1 request must carry `Authorization: Bearer <apiKey>`, else 401. */
  apiKey?: string;
  /** What GET /v1/models lists. Default ['fake-model', 'fake-model-large']. */
  models?: string[];
  /** Listen on this port (default: a free one), e.g. to bring a provider back up at the same URL. */
  port?: number;
  /** Answer Ollama's `POST /api/show` with this `num_ctx` in the model's parameters (else 404, as a server that is not Ollama). */
  ollamaNumCtx?: number;
}

/** Default answers are OpenAI's error shape for the status (a 401 quotes part of the presented key, as OpenAI does). */
export interface FakeOpenAI extends FakeServer<FakeStep> {
  /** Base URL including /v1, e.g. `http://127.0.0.1:43123/v1`. */
  readonly url: string;
}

const echo: FakeStepSource = (request) => ({ text: `echo: ${lastUserMessage(request.body)}` });

export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const models = options.models ?? ['fake-model', 'fake-model-large'];
  let callCounter = 0;

  async function handle(exchange: Exchange, kit: FakeKit<FakeStep>): Promise<void> {
    const { record, res } = exchange;
    const path = record.path.split('?')[0];
    if (options.apiKey !== undefined && path.startsWith('/v1/')) {
      const presented = presentedKey(record);
      if (presented !== options.apiKey) return sendJson(res, 401, errorBody(401, presented));
    }
    // A local server's own endpoints (providers/server-window.ts asks them); recorded in `asides`.
    if (record.method === 'POST' && path === '/api/show' && options.ollamaNumCtx !== undefined) {
      return sendJson(res, 200, { modelfile: '', parameters: `stop "<|eot_id|>"\nnum_ctx ${options.ollamaNumCtx}`, model_info: { 'llama.context_length': 131072 } });
    }
    if (path.startsWith('/api/')) return sendJson(res, 404, { error: 'not found' });
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
      return answer(kit.nextStep(record), exchange, kit);
    }
    return sendJson(res, 404, { error: { message: `Unknown request URL: ${record.method} ${path}.`, type: 'invalid_request_error', param: null, code: 'unknown_url' } });
  }

  async function answer(scripted: FakeStep, exchange: Exchange, kit: FakeKit<FakeStep>): Promise<void> {
    const { record, res } = exchange;
    const request = record.body as { stream?: boolean; model?: string; stream_options?: { include_usage?: boolean } };
    const streaming = request.stream === true;
    const step = await kit.answerCommon(scripted, exchange, {
      streaming,
      errorBody: (status) => errorBody(status, presentedKey(record)),
    });
    if (!step) return;
    if ('malformed' in step) {
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
    const usage = step.usage === null ? undefined : (step.usage ?? { prompt_tokens: countWords(JSON.stringify(request)), completion_tokens: countWords(text) + calls.length });

    if (!streaming) {
      if (step.hangAfterChunks !== undefined) return;
      if (step.resetAfterChunks !== undefined) return exchange.reset();
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
        ...(usage && { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }),
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
    if (request.stream_options?.include_usage && usage) {
      events.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } });
    }

    return kit.stream(
      exchange,
      events.map((event) => `data: ${JSON.stringify(event)}\n\n`),
      {
        delayMs: step.chunkDelayMs,
        end: 'data: [DONE]\n\n',
        // The `...AfterChunks` options count content chunks: every event after the opening role chunk.
        control: (sent) => (step.hangAfterChunks === sent - 1 ? 'hang' : step.resetAfterChunks === sent - 1 ? 'reset' : undefined),
        hold: (sent) => (step.holdAfterChunks?.chunks === sent - 1 ? step.holdAfterChunks.until : undefined),
      },
    );
  }

  return startFakeServer<FakeStep>({ name: 'fake-openai', fallback: echo, baseUrl: (origin) => `${origin}/v1`, handle, port: options.port, aside: (path) => path.startsWith('/api/') });
}

function presentedKey(record: RecordedRequest): string | undefined {
  return /^Bearer\s+(.*)$/i.exec(String(record.headers.authorization ?? ''))?.[1];
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
      return status >= 500 ? error('The server had an error while processing your request. Sorry about that!', 'server_error', null) : error(`Fake error ${status}.`, 'invalid_request_error', null);
  }
}

function maskKey(key: string): string {
  return key.length > 12 ? `${key.slice(0, 8)}${'*'.repeat(Math.max(3, key.length - 12))}${key.slice(-4)}` : `${key.slice(0, 2)}***${key.slice(-2)}`;
}

function lastUserMessage(body: unknown): string {
  const messages = (body as { messages?: { role?: string; content?: unknown }[] } | undefined)?.messages ?? [];
  const last = [...messages].reverse().find((m) => m?.role === 'user' && !isServiceNote(m.content));
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  if (Array.isArray(last.content)) {
    return last.content.map((part: { text?: unknown }) => (typeof part?.text === 'string' && !isServiceNote(part.text) ? part.text : '')).join('');
  }
  return '';
}
