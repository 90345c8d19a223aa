/**
 * Provider for any OpenAI-compatible chat completions endpoint (OpenAI, Ollama, LM Studio, vLLM,
 * OpenRouter, ...) through the official SDK. The SDK does the HTTP and SSE parsing; retries, timeouts,
 * cancellation and error text are ours (see retry.ts for why), so every failure is a ProviderError
 * whose message is safe to show.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { PROVIDERS, type ProviderName } from '../../protocol';
import { createHttpProvider, explanationOf, type SdkProviderOptions, type StreamAssembler } from './http-provider';
import type { Attempt } from './attempt';
import { ServerWindows } from './server-window';
import { type ChatMessage, type CompletionRequest, type CompletionResult, type CompletionUsage, type Provider } from './types';

export interface OpenAIProviderOptions extends SdkProviderOptions {
  /** Base URL including the version path, e.g. `http://127.0.0.1:11434/v1`. Default: OpenAI's. */
  baseUrl?: string;
}

export const OPENAI_DEFAULT_BASE_URL = PROVIDERS.openai.defaultBaseUrl;
const NAME: ProviderName = 'openai';

type WireMessage = OpenAI.ChatCompletionMessageParam;
type WireBody = Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, 'stream'>;

export function createOpenAIProvider(options: OpenAIProviderOptions = {}): Provider {
  const apiKey = options.apiKey || undefined;
  const baseUrl = options.baseUrl || OPENAI_DEFAULT_BASE_URL;
  const core = createHttpProvider({
    name: NAME,
    apiKey,
    baseUrl,
    secrets: options.secrets,
    timeoutMs: options.timeoutMs,
    maxRetries: options.maxRetries,
    errors: { APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError },
    vendorHost: 'api.openai.com',
    missingKeyHint: 'set api_key, or base_url for a local server',
    errorText,
    // OpenRouter and others report upstream failures as an error event inside the stream.
    streamErrorEvent: (error, { fail, cause, withProviderText }) =>
      withProviderText(fail('unavailable', `the server reported an error mid-answer: ${cause(errorText(error)) || 'no details'}`), errorText(error)),
    statusFailure(error, { status, suffix, after, retryable }, { fail }) {
      if (status !== 429) return undefined;
      if (errorCode(error) === 'insufficient_quota') {
        return fail('rate_limited', `quota exceeded (HTTP 429); check the plan and billing${suffix}`, status);
      }
      return retryable(true, fail('rate_limited', `rate limited (HTTP 429)${after}`, status));
    },
    toolCalls: { idPrefix: 'call_', nameNoun: 'function name', argumentsNoun: 'arguments', cutOffReason: 'length' },
    fetch: options.fetch,
  });
  const { fail, isVendorHost: isOpenAI, toolCall } = core;

  const client = new OpenAI({
    ...core.clientOptions,
    baseURL: baseUrl,
    // Explicit nulls: the SDK would otherwise read OPENAI_* environment variables behind the config's back.
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
  });

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

  function openStream(body: WireBody, attempt: Attempt) {
    return client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }, core.requestOptions(attempt));
  }

  /** Joins streamed chunks: text in order, tool-call fragments by their index. */
  class ChunkAssembler implements StreamAssembler<OpenAI.ChatCompletionChunk> {
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
      const calls = [...this.calls.entries()].sort(([a], [b]) => a - b).map(([index, call]) => toolCall(index, call.id, call.name, call.args, this.finishReason));
      return withUsage({ text: this.text, tool_calls: calls, finish_reason: this.finishReason }, this.usage);
    }
  }

  // A vendor's host tells no window this way; a local server (Ollama, LM Studio) may, and asking it
  // ahead opens the connection the first turn then reuses (in place of the core's preconnect).
  const windows = isOpenAI ? undefined : new ServerWindows(baseUrl);
  const provider = core.provider({
    buildBody,
    complete: async (body, attempt) => fromCompletion(await client.chat.completions.create({ ...body, stream: false }, core.requestOptions(attempt))),
    // Once streaming, nothing is retried: part of the answer may already have been shown.
    openStream,
    assembler: () => new ChunkAssembler(),
    models: (attempt) => client.models.list(core.requestOptions(attempt)),
    sortModels: true,
  });
  return windows ? { ...provider, contextWindow: (model) => windows.of(model), warmUp: (model) => windows.warmUp(model) } : provider;
}

function toWireMessage(message: ChatMessage): WireMessage {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      if (!message.images?.length) return { role: 'user', content: message.content };
      // A vision model gets the images as `image_url` parts holding data URLs, after the text.
      return {
        role: 'user',
        content: [
          ...(message.content ? [{ type: 'text' as const, text: message.content }] : []),
          ...message.images.map((image) => ({ type: 'image_url' as const, image_url: { url: `data:${image.mime};base64,${image.base64}` } })),
        ],
      };
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
  // Included in prompt_tokens; reported by OpenAI (and some compatible servers) only.
  const cached = usage.prompt_tokens_details?.cached_tokens;
  if (typeof cached === 'number') counted.cached_tokens = cached;
  return { ...result, usage: counted };
}

/** The provider's own explanation of a failed answer (to be passed through cleanCause). */
function errorText(error: APIError): string {
  const body = error.error as { message?: unknown } | undefined;
  return explanationOf(body && typeof body === 'object' ? body : undefined, error.message);
}

function errorCode(error: APIError): unknown {
  return error.code ?? (error.error as { code?: unknown } | undefined)?.code;
}
