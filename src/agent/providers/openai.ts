/**
 * Provider for any OpenAI-compatible chat completions endpoint (OpenAI, Ollama, LM Studio, vLLM,
 * OpenRouter, ...) through the official SDK. The SDK does the HTTP and SSE parsing; retries, timeouts,
 * cancellation and error text are ours (see retry.ts for why), so every failure is a ProviderError
 * whose message is safe to show.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { describeEndpoint, safeDetail } from './redact';
import { RetryableFailure, retryAfterMs, withRetries } from './retry';
import { Attempt } from './attempt';
import { codeOf, httpUrl, innermostMessage, isAbortError, seconds, UNREACHABLE_CODES, urlSecrets } from './failure-details';
import {
  ProviderError,
  type ChatMessage,
  type CompletionRequest,
  type CompletionResult,
  type CompletionUsage,
  type Provider,
  type ProviderErrorKind,
  type ToolCall,
} from './types';

export interface OpenAIProviderOptions {
  /** Omitted: a placeholder is sent, which keyless local servers accept. */
  apiKey?: string;
  /** Base URL including the version path, e.g. `http://127.0.0.1:11434/v1`. Default: OpenAI's. */
  baseUrl?: string;
  /**
   * Per attempt: the longest wait for the answer to start, and, while streaming, the longest silence
   * between two chunks. Timeouts are not retried. Default 120000.
   */
  timeoutMs?: number;
  /** Retries after a 408/409/429/5xx answer or a failed connection, before any answer arrived. Default 2. */
  maxRetries?: number;
}

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
const NAME = 'openai';
const PLACEHOLDER_KEY = 'no-key';
/** Codes of a connection that could not be made at all (as opposed to one that broke). */

type Phase = 'open' | 'stream';
type WireMessage = OpenAI.ChatCompletionMessageParam;
type WireBody = Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, 'stream'>;

export function createOpenAIProvider(options: OpenAIProviderOptions = {}): Provider {
  const apiKey = options.apiKey || undefined;
  const baseUrl = options.baseUrl || OPENAI_DEFAULT_BASE_URL;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const maxRetries = options.maxRetries ?? 2;
  const endpoint = describeEndpoint(baseUrl);
  // Whatever of the configuration could be a credential, for redaction.
  const secrets = [apiKey, ...urlSecrets(baseUrl)];
  const isOpenAI = httpUrl(baseUrl)?.hostname === 'api.openai.com';

  const client = new OpenAI({
    apiKey: apiKey ?? PLACEHOLDER_KEY,
    baseURL: baseUrl,
    // Explicit nulls: the SDK would otherwise read OPENAI_* environment variables behind the config's back.
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    maxRetries: 0,
    // Our own watchdog (Attempt) governs; the SDK's only covers the wait for headers.
    timeout: timeoutMs + 5_000,
    // The SDK logs unparsable stream data to the console; failures reach the caller as errors instead.
    logLevel: 'off',
  });

  const fail = (kind: ProviderErrorKind, message: string, status?: number) =>
    new ProviderError(NAME, kind, `${NAME}: ${message}`, status);

  function requireUsable(): void {
    const url = httpUrl(baseUrl);
    if (!url) throw fail('not_configured', `invalid base URL ${endpoint}`);
    // fetch refuses such URLs; say so plainly rather than as a connection failure.
    if (url.username || url.password) {
      throw fail('not_configured', `the base URL ${endpoint} must not contain credentials (user:password@); use api_key`);
    }
    if (!apiKey && isOpenAI) throw fail('not_configured', 'no API key configured (set api_key, or base_url for a local server)');
  }

  function requestOptions(attempt: Attempt) {
    return { signal: attempt.signal, maxRetries: 0, timeout: timeoutMs + 5_000 };
  }

  /** Turns anything thrown during an attempt into the error the caller sees (or a retryable one). */
  function failureOf(error: unknown, attempt: Attempt, phase: Phase): ProviderError | RetryableFailure {
    if (error instanceof ProviderError || error instanceof RetryableFailure) return error;
    if (attempt.cancelled) return fail('cancelled', 'request cancelled');
    if (attempt.timedOut || error instanceof APIConnectionTimeoutError) {
      return phase === 'open'
        ? fail('timeout', `no response within ${seconds(timeoutMs)}`)
        : fail('timeout', `the answer stalled: nothing received for ${seconds(timeoutMs)}`);
    }
    if (error instanceof APIUserAbortError || isAbortError(error)) return fail('cancelled', 'request cancelled');
    if (error instanceof APIConnectionError) {
      // Only thrown while opening (no answer yet), so always safe to retry.
      return new RetryableFailure(connectionFailure(error, phase));
    }
    if (error instanceof APIError) {
      if (error.status === undefined) {
        // An error event inside a stream (OpenRouter and others report upstream failures this way).
        return fail('unavailable', `the server reported an error mid-answer: ${safeDetail(errorText(error), secrets) || 'no details'}`);
      }
      return statusFailure(error);
    }
    if (error instanceof SyntaxError) return fail('bad_response', phase === 'stream' ? 'malformed stream' : 'malformed response (not JSON)');
    if (codeOf(error) || (error instanceof TypeError && /terminated|fetch failed/i.test(error.message))) {
      return connectionFailure(error, phase);
    }
    return fail('bad_response', `unexpected failure: ${safeDetail(error instanceof Error ? error.message : error, secrets) || 'unknown'}`);
  }

  function connectionFailure(error: unknown, phase: Phase): ProviderError {
    const code = codeOf(error);
    const cause = code ?? (safeDetail(innermostMessage(error), secrets, 80) || 'connection failed');
    if (phase === 'stream') return fail('network', `connection lost while receiving the answer (${cause})`);
    if (code && UNREACHABLE_CODES.has(code)) return fail('network', `cannot reach ${endpoint} (${code})`);
    return fail('network', `connection to ${endpoint} failed (${cause})`);
  }

  function statusFailure(error: APIError): ProviderError | RetryableFailure {
    const status = error.status as number;
    // A 401's text quotes the key back: it is left out entirely rather than trusted to redaction.
    const detail = status === 401 ? '' : safeDetail(errorText(error), secrets);
    const suffix = detail ? `: ${detail}` : '';
    const waitMs = retryAfterMs(error.headers);
    const hint = error.headers?.get('x-should-retry');
    const retryable = (defaultRetryable: boolean, failure: ProviderError) =>
      (hint === 'true' || (hint !== 'false' && defaultRetryable)) ? new RetryableFailure(failure, waitMs) : failure;

    if (status === 401) return fail('auth', 'authentication failed (HTTP 401); check the API key', status);
    if (status === 403) return fail('auth', `access denied (HTTP 403)${suffix}`, status);
    if (status === 429) {
      if (errorCode(error) === 'insufficient_quota') {
        return fail('rate_limited', `quota exceeded (HTTP 429); check the plan and billing${suffix}`, status);
      }
      const after = waitMs !== undefined ? `; retry after ${seconds(waitMs)}` : '';
      return retryable(true, fail('rate_limited', `rate limited (HTTP 429)${after}`, status));
    }
    if (status >= 500) return retryable(true, fail('unavailable', `server error (HTTP ${status})${suffix}`, status));
    if (status === 408) return retryable(true, fail('timeout', `the server timed out (HTTP 408)${suffix}`, status));
    if (status === 409) return retryable(true, fail('unavailable', `conflict (HTTP 409)${suffix}`, status));
    if (status === 404) {
      return retryable(false, fail('bad_request', `not found (HTTP 404); check the model and the base URL ${endpoint}${suffix}`, status));
    }
    return retryable(false, fail('bad_request', `request rejected (HTTP ${status})${suffix}`, status));
  }

  function buildBody(request: CompletionRequest): WireBody {
    const body: WireBody = { model: request.model, messages: request.messages.map(toWireMessage) };
    if (request.temperature !== undefined) body.temperature = request.temperature;
    if (request.max_tokens !== undefined) {
      // OpenAI's reasoning models refuse max_tokens; most compatible servers know only max_tokens.
      if (isOpenAI) body.max_completion_tokens = request.max_tokens;
      else body.max_tokens = request.max_tokens;
    }
    if (request.tools && request.tools.length > 0) {
      body.tools = request.tools.map((tool) => ({
        type: 'function' as const,
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      }));
    }
    return body;
  }

  function toolCall(index: number, id: unknown, name: unknown, args: unknown, finishReason: string | null): ToolCall {
    if (typeof name !== 'string' || name === '') throw fail('bad_response', 'malformed tool call (no function name)');
    return {
      id: typeof id === 'string' && id !== '' ? id : `call_${index}`,
      name,
      arguments: parseArguments(name, args, finishReason === 'length'),
    };
  }

  function parseArguments(name: string, raw: unknown, cutOff: boolean): Record<string, unknown> {
    let value = raw;
    if (typeof raw === 'string') {
      if (raw.trim() === '') return {};
      try {
        value = JSON.parse(raw);
      } catch {
        const why = cutOff ? ' (the answer was cut off at the token limit)' : '';
        throw fail('bad_response', `tool call ${safeDetail(name, secrets, 64)} has malformed JSON arguments${why}`);
      }
    }
    if (value === undefined || value === null) return {};
    if (typeof value !== 'object' || Array.isArray(value)) {
      throw fail('bad_response', `tool call ${safeDetail(name, secrets, 64)} arguments are not a JSON object`);
    }
    return value as Record<string, unknown>;
  }

  function fromCompletion(completion: OpenAI.ChatCompletion): CompletionResult {
    const choice = completion?.choices?.[0];
    const message = choice?.message;
    if (!message) throw fail('bad_response', 'malformed response (no choices)');
    const text = typeof message.content === 'string' ? message.content : typeof message.refusal === 'string' ? message.refusal : '';
    const finishReason = choice.finish_reason ?? null;
    const calls = (message.tool_calls ?? []).flatMap((call, index) =>
      'function' in call && call.function ? [toolCall(index, call.id, call.function.name, call.function.arguments, finishReason)] : [],
    );
    return withUsage({ text, tool_calls: calls, finish_reason: finishReason }, completion.usage);
  }

  async function completeOnce(body: WireBody, signal: AbortSignal | undefined): Promise<CompletionResult> {
    const attempt = new Attempt(signal, timeoutMs);
    try {
      const completion = await client.chat.completions.create({ ...body, stream: false }, requestOptions(attempt));
      return fromCompletion(completion);
    } catch (error) {
      throw failureOf(error, attempt, 'open');
    } finally {
      attempt.dispose();
    }
  }

  async function streamOnce(body: WireBody, onDelta: (text: string) => void, signal: AbortSignal | undefined): Promise<CompletionResult> {
    const attempt = new Attempt(signal, timeoutMs);
    try {
      let stream: Awaited<ReturnType<typeof openStream>>;
      try {
        stream = await openStream(body, attempt);
      } catch (error) {
        throw failureOf(error, attempt, 'open');
      }
      // From here on nothing is retried: part of the answer may already have been shown.
      const sdkStream = stream;
      attempt.signal.addEventListener('abort', () => sdkStream.controller.abort(), { once: true });
      attempt.touch();
      const assembler = new StreamAssembler();
      let callbackFailure: { error: unknown } | undefined;
      try {
        for await (const chunk of stream) {
          attempt.touch();
          const piece = assembler.add(chunk);
          if (!piece) continue;
          try {
            onDelta(piece);
          } catch (error) {
            callbackFailure = { error };
            break; // leaving the loop aborts the request
          }
        }
      } catch (error) {
        const failure = failureOf(error, attempt, 'stream');
        throw failure instanceof RetryableFailure ? failure.error : failure;
      }
      if (callbackFailure) throw callbackFailure.error;
      // The SDK ends the iteration quietly when the request is aborted.
      if (attempt.signal.aborted) throw failureOf(new APIUserAbortError(), attempt, 'stream');
      return assembler.result();
    } finally {
      attempt.dispose();
    }
  }

  function openStream(body: WireBody, attempt: Attempt) {
    return client.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      requestOptions(attempt),
    );
  }

  /** Joins streamed chunks: text in order, tool-call fragments by their index. */
  class StreamAssembler {
    private text = '';
    private finishReason: string | null = null;
    private usage: OpenAI.CompletionUsage | undefined;
    private chunks = 0;
    private readonly calls = new Map<number, { id: string; name: string; args: string }>();

    add(chunk: OpenAI.ChatCompletionChunk): string {
      if (typeof chunk !== 'object' || chunk === null) throw fail('bad_response', 'malformed stream');
      this.chunks++;
      if (chunk.usage) this.usage = chunk.usage;
      const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
      const choice = choices.find((c) => c?.index === 0) ?? choices[0];
      if (!choice) return '';
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
      const delta = choice.delta ?? {};
      (delta.tool_calls ?? []).forEach((fragment, position) => this.addToolFragment(fragment, position));
      const piece = typeof delta.content === 'string' ? delta.content : '';
      this.text += piece;
      return piece;
    }

    private addToolFragment(fragment: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall, position: number): void {
      const index = typeof fragment?.index === 'number' ? fragment.index : position;
      let call = this.calls.get(index);
      if (!call) this.calls.set(index, (call = { id: '', name: '', args: '' }));
      if (typeof fragment.id === 'string' && fragment.id && !call.id) call.id = fragment.id;
      const fn = fragment.function;
      // Most servers send the name once; some repeat it whole in every fragment, a few split it.
      if (typeof fn?.name === 'string' && fn.name !== call.name) call.name += fn.name;
      const args: unknown = fn?.arguments;
      if (typeof args === 'string') call.args += args;
      else if (args && typeof args === 'object') call.args = JSON.stringify(args);
    }

    result(): CompletionResult {
      if (this.chunks === 0) throw fail('bad_response', 'malformed stream (no data)');
      const calls = [...this.calls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, call]) => toolCall(index, call.id, call.name, call.args, this.finishReason));
      return withUsage({ text: this.text, tool_calls: calls, finish_reason: this.finishReason }, this.usage);
    }
  }

  return {
    name: NAME,

    async complete(request: CompletionRequest): Promise<CompletionResult> {
      requireUsable();
      const { signal, onDelta } = request;
      if (signal?.aborted) throw fail('cancelled', 'request cancelled');
      const body = buildBody(request);
      return withRetries(
        () => (onDelta ? streamOnce(body, onDelta, signal) : completeOnce(body, signal)),
        { provider: NAME, maxRetries, signal },
      );
    },

    async listModels(signal?: AbortSignal): Promise<string[]> {
      requireUsable();
      if (signal?.aborted) throw fail('cancelled', 'request cancelled');
      return withRetries(
        async () => {
          const attempt = new Attempt(signal, timeoutMs);
          try {
            const ids = new Set<string>();
            for await (const model of client.models.list(requestOptions(attempt))) {
              attempt.touch();
              if (typeof model?.id === 'string') ids.add(model.id);
            }
            return [...ids].sort();
          } catch (error) {
            throw failureOf(error, attempt, 'open');
          } finally {
            attempt.dispose();
          }
        },
        { provider: NAME, maxRetries, signal },
      );
    },
  };
}

function toWireMessage(message: ChatMessage): WireMessage {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant':
      if (!message.tool_calls || message.tool_calls.length === 0) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        content: message.content,
        tool_calls: message.tool_calls.map((call) => ({
          id: call.id,
          type: 'function' as const,
          function: { name: call.name, arguments: JSON.stringify(call.arguments) },
        })),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.tool_call_id, content: message.content };
  }
}

function withUsage(result: CompletionResult, usage: OpenAI.CompletionUsage | null | undefined): CompletionResult {
  if (!usage || typeof usage !== 'object') return result;
  const counted: CompletionUsage = {};
  if (typeof usage.prompt_tokens === 'number') counted.input_tokens = usage.prompt_tokens;
  if (typeof usage.completion_tokens === 'number') counted.output_tokens = usage.completion_tokens;
  return { ...result, usage: counted };
}

/** The provider's own explanation of a failed answer (to be passed through safeDetail). */
function errorText(error: APIError): string {
  const body = error.error as { message?: unknown } | undefined;
  if (body && typeof body === 'object') {
    return typeof body.message === 'string' ? body.message : JSON.stringify(body);
  }
  // Not JSON: the SDK puts `<status> <body text>` in the message. Proxies answer with HTML pages.
  return error.message
    .replace(/^\d{3}\s*/, '')
    .replace(/^status code \(no body\)$/, '')
    .replace(/<[^>]*>/g, ' ');
}

function errorCode(error: APIError): unknown {
  return error.code ?? (error.error as { code?: unknown } | undefined)?.code;
}

