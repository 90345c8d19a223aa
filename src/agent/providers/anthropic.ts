/**
 * Provider for Anthropic's Messages API (and servers that speak it) through the official SDK. The SDK
 * does the HTTP and SSE parsing; retries, timeouts, cancellation and error text are ours (see
 * retry.ts for why), so every failure is a ProviderError whose message is safe to show.
 */
import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { PROVIDERS, type ProviderName } from '../../protocol';
import type { Attempt } from './attempt';
import { createHttpProvider, explanationOf, type HttpProviderCore, type SdkProviderOptions, type StreamAssembler } from './http-provider';
import { ProviderError, type ChatMessage, type CompletionRequest, type CompletionResult, type CompletionUsage, type ImageInput, type Provider, type ToolCall } from './types';

export interface AnthropicProviderOptions extends SdkProviderOptions {
  /**
   * Default `https://api.anthropic.com`. Given with or without a trailing `/v1`: the API's paths
   * (`/v1/messages`) are added to what remains.
   */
  baseUrl?: string;
}

export const ANTHROPIC_DEFAULT_BASE_URL = PROVIDERS.anthropic.defaultBaseUrl;
/** The API requires max_tokens; used when the request sets none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;
const NAME: ProviderName = 'anthropic';
/** The API insists a conversation opens with a user turn; a trimmed history may not. */
const OPENING_PLACEHOLDER = '(earlier messages omitted)';

type WireBody = Omit<Anthropic.MessageCreateParamsNonStreaming, 'stream'>;
type WireMessage = Anthropic.MessageParam;
type WireBlock = Anthropic.ContentBlockParam;

export function createAnthropicProvider(options: AnthropicProviderOptions = {}): Provider {
  const core = createHttpProvider({
    name: NAME,
    apiKey: options.apiKey || undefined,
    baseUrl: options.baseUrl || ANTHROPIC_DEFAULT_BASE_URL,
    secrets: options.secrets,
    timeoutMs: options.timeoutMs,
    maxRetries: options.maxRetries,
    errors: { APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError },
    vendorHost: 'api.anthropic.com',
    missingKeyHint: 'set api_key, or base_url for a compatible server',
    errorText,
    streamErrorEvent,
    statusFailure(_error, { status, suffix, retryable }, { fail }) {
      if (status === 529) return retryable(true, fail('unavailable', `overloaded (HTTP 529)${suffix}`, status));
      if (status === 413) return retryable(false, fail('bad_request', `request too large (HTTP 413)${suffix}`, status));
      return undefined;
    },
    toolCalls: { idPrefix: 'toolu_', nameNoun: 'tool name', argumentsNoun: 'input', cutOffReason: 'max_tokens' },
    // Before any text was shown, an overload or a dropped connection mid-stream is as retryable as a 529
    // or a refused connection.
    retryMidStream: (error) => error.kind === 'unavailable' || error.kind === 'rate_limited' || error.kind === 'network',
    fetch: options.fetch,
  });
  const { fail, toolCall, url: parsedBase } = core;

  const client = new Anthropic({
    ...core.clientOptions,
    // Explicit nulls: the SDK would otherwise read ANTHROPIC_* environment variables (and, with no key,
    // credential files) behind the config's back, and could send a bearer token to a custom base URL.
    authToken: null,
    webhookKey: null,
    baseURL: parsedBase ? sdkBaseUrl(parsedBase) : ANTHROPIC_DEFAULT_BASE_URL,
    // The SDK appends paths to the base as text, so a query on the base URL is carried this way.
    defaultQuery: parsedBase && parsedBase.search ? Object.fromEntries(parsedBase.searchParams) : undefined,
    // No spans: they could carry conversation content to whatever tracer another extension registered.
    openTelemetry: false,
  });

  function buildBody(request: CompletionRequest): WireBody {
    const { system, messages } = toWireConversation(request.messages);
    const body: WireBody = { model: request.model, max_tokens: request.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS, messages };
    if (system) body.system = system;
    // The service allows 0..2 (OpenAI's range); Anthropic accepts 0..1.
    if (request.temperature !== undefined) body.temperature = Math.min(1, Math.max(0, request.temperature));
    if (request.tools && request.tools.length > 0) {
      body.tools = request.tools.map((tool) => ({
        name: tool.name,
        ...(tool.description ? { description: tool.description } : {}),
        input_schema: { ...tool.parameters, type: 'object' as const },
      }));
    }
    return body;
  }

  function fromMessage(message: Anthropic.Message): CompletionResult {
    if (!message || typeof message !== 'object' || !Array.isArray(message.content)) {
      throw fail('bad_response', 'malformed response (no content)');
    }
    const stopReason = typeof message.stop_reason === 'string' ? message.stop_reason : null;
    let text = '';
    const calls: ToolCall[] = [];
    message.content.forEach((block, index) => {
      if (block?.type === 'text' && typeof block.text === 'string') text += block.text;
      else if (block?.type === 'tool_use') calls.push(toolCall(index, block.id, block.name, block.input, stopReason));
    });
    return withUsage({ text, tool_calls: calls, finish_reason: stopReason }, usageOf(message.usage));
  }

  function openStream(body: WireBody, attempt: Attempt) {
    return client.messages.create({ ...body, stream: true }, core.requestOptions(attempt));
  }

  /** Joins stream events: text deltas in order, tool_use input from its partial JSON, by block index. */
  class EventAssembler implements StreamAssembler<Anthropic.RawMessageStreamEvent> {
    private text = '';
    private stopReason: string | null = null;
    private usage: CompletionUsage | undefined;
    private started = false;
    private stopped = false;
    private events = 0;
    private readonly blocks = new Map<number, { kind: 'text' } | { kind: 'tool'; id: unknown; name: unknown; json: string; input: unknown } | { kind: 'other' }>();

    add(event: Anthropic.RawMessageStreamEvent): string {
      if (typeof event !== 'object' || event === null || typeof event.type !== 'string') throw fail('bad_response', 'malformed stream');
      this.events++;
      switch (event.type) {
        case 'message_start': {
          this.started = true;
          const message = event.message;
          if (typeof message?.stop_reason === 'string') this.stopReason = message.stop_reason;
          this.usage = mergeUsage(this.usage, usageOf(message?.usage));
          return '';
        }
        case 'content_block_start': {
          const block = event.content_block;
          const index = this.indexOf(event);
          if (block?.type === 'text') {
            this.blocks.set(index, { kind: 'text' });
            return this.addText(block.text);
          }
          if (block?.type === 'tool_use') {
            this.blocks.set(index, { kind: 'tool', id: block.id, name: block.name, json: '', input: block.input });
          } else {
            this.blocks.set(index, { kind: 'other' });
          }
          return '';
        }
        case 'content_block_delta': {
          const index = this.indexOf(event);
          const delta = event.delta;
          const block = this.blocks.get(index);
          if (delta?.type === 'text_delta') {
            if (!block) this.blocks.set(index, { kind: 'text' });
            else if (block.kind !== 'text') throw fail('bad_response', 'malformed stream (text for a non-text block)');
            return this.addText(delta.text);
          }
          if (delta?.type === 'input_json_delta') {
            if (block?.kind !== 'tool') throw fail('bad_response', 'malformed stream (tool input for an unknown block)');
            if (typeof delta.partial_json === 'string') block.json += delta.partial_json;
          }
          // Thinking, signatures and citations are not part of the answer text.
          return '';
        }
        case 'message_delta': {
          if (typeof event.delta?.stop_reason === 'string') this.stopReason = event.delta.stop_reason;
          this.usage = mergeUsage(this.usage, usageOf(event.usage));
          return '';
        }
        case 'message_stop':
          this.stopped = true;
          return '';
        default:
          // content_block_stop, and event types newer than this code.
          return '';
      }
    }

    private indexOf(event: { index?: unknown }): number {
      if (typeof event.index !== 'number') throw fail('bad_response', 'malformed stream (content block without index)');
      return event.index;
    }

    private addText(piece: unknown): string {
      if (typeof piece !== 'string') return '';
      this.text += piece;
      return piece;
    }

    result(): CompletionResult {
      if (this.events === 0) throw fail('bad_response', 'malformed stream (no data)');
      if (!this.started || (!this.stopped && this.stopReason === null)) {
        throw fail('bad_response', 'malformed stream (it ended before the answer was complete)');
      }
      const calls = [...this.blocks.entries()]
        .sort(([a], [b]) => a - b)
        .flatMap(([index, block]) => (block.kind === 'tool' ? [toolCall(index, block.id, block.name, block.json !== '' ? block.json : block.input, this.stopReason)] : []));
      return withUsage({ text: this.text, tool_calls: calls, finish_reason: this.stopReason }, this.usage);
    }
  }

  return core.provider({
    buildBody,
    complete: async (body, attempt) => fromMessage(await client.messages.create({ ...body, stream: false }, core.requestOptions(attempt))),
    openStream,
    assembler: () => new EventAssembler(),
    models: (attempt) => client.models.list({ limit: 1000 }, core.requestOptions(attempt)),
    // Model ids in the API's order (newest first).
    sortModels: false,
  });
}

/** An `event: error` inside a 200 stream: Anthropic reports overload that began mid-answer this way. */
function streamErrorEvent(error: APIError, core: HttpProviderCore): ProviderError {
  // An authentication error's text may quote the key: left out of the log too, like a 401's.
  const logged = errorType(error) === 'authentication_error' ? '' : errorText(error);
  return core.withProviderText(streamErrorEventOf(error, core), logged);
}

function streamErrorEventOf(error: APIError, { fail, detail, cause }: HttpProviderCore): ProviderError {
  const type = errorType(error) ?? 'unknown_error';
  const text = type === 'authentication_error' ? '' : cause(errorText(error));
  const what = `the server reported ${detail(type, 40)} mid-answer${text ? `: ${text}` : ''}`;
  switch (type) {
    case 'rate_limit_error':
      return fail('rate_limited', what);
    case 'authentication_error':
    case 'permission_error':
      return fail('auth', what);
    case 'invalid_request_error':
    case 'request_too_large':
    case 'not_found_error':
      return fail('bad_request', what);
    default:
      return fail('unavailable', what);
  }
}

/**
 * The conversation in the Messages API's shape: system messages joined into `system`; tool calls as
 * `tool_use` blocks of the assistant turn; tool results as `tool_result` blocks of one user turn
 * (the API wants all results of a turn together, first in the next user message); consecutive turns of
 * one role merged; empty text left out (the API rejects empty text blocks).
 */
export function toWireConversation(messages: readonly ChatMessage[]): { system?: string | Anthropic.TextBlockParam[]; messages: WireMessage[] } {
  const system: string[] = [];
  const turns: { role: 'user' | 'assistant'; blocks: WireBlock[] }[] = [];
  // The last block before the turn's note: the end of what the next request repeats (cached).
  let cachedUpTo: WireBlock | undefined;
  const push = (role: 'user' | 'assistant', blocks: WireBlock[]) => {
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last?.role === role) last.blocks.push(...blocks);
    else turns.push({ role, blocks: [...blocks] });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        if (message.content.trim()) system.push(message.content);
        break;
      case 'user':
        if (message.moment) cachedUpTo = turns.at(-1)?.blocks.at(-1);
        push('user', [...textBlocks(message.content), ...imageBlocks(message.images)]);
        break;
      case 'assistant':
        push('assistant', [
          ...textBlocks(message.content),
          ...(message.tool_calls ?? []).map((call): WireBlock => ({
            type: 'tool_use',
            id: wireToolId(call.id),
            name: call.name,
            input: call.arguments ?? {},
          })),
        ]);
        break;
      case 'tool':
        push('user', [
          {
            type: 'tool_result',
            tool_use_id: wireToolId(message.tool_call_id),
            ...(message.content ? { content: message.content } : {}),
          },
        ]);
        break;
    }
  }
  if (turns[0]?.role === 'assistant') turns.unshift({ role: 'user', blocks: [{ type: 'text', text: OPENING_PLACEHOLDER }] });
  const wire = turns.map(({ role, blocks }): WireMessage => {
    // Tool results must lead their user turn.
    const ordered = role === 'user' ? [...blocks.filter(isToolResult), ...blocks.filter((b) => !isToolResult(b))] : blocks;
    const only = ordered.length === 1 && ordered[0] !== cachedUpTo ? ordered[0] : undefined;
    return { role, content: only?.type === 'text' ? only.text : ordered };
  });
  if (system.length === 0) return { messages: wire };
  const text = system.join('\n\n');
  if (!messages.some((message) => message.role === 'user' && message.moment)) return { system: text, messages: wire };
  // The agent's requests (they end with the turn's note): the tools and the system prompt, and the
  // conversation up to the note, are marked for the prompt cache (Anthropic caches only what is marked).
  if (cachedUpTo) Object.assign(cachedUpTo, { cache_control: EPHEMERAL });
  return { system: [{ type: 'text', text, cache_control: EPHEMERAL }], messages: wire };
}

const EPHEMERAL = { type: 'ephemeral' } as const;

function textBlocks(text: string): WireBlock[] {
  return text.trim() ? [{ type: 'text', text }] : [];
}

/** Images for a vision model: `image` blocks with a base64 source (the types Anthropic accepts, as the upload told them by their bytes). */
function imageBlocks(images: readonly ImageInput[] | undefined): WireBlock[] {
  return (images ?? []).map((image) => ({
    type: 'image',
    source: { type: 'base64', media_type: image.mime as Anthropic.Base64ImageSource['media_type'], data: image.base64 },
  }));
}

function isToolResult(block: WireBlock): boolean {
  return block.type === 'tool_result';
}

/** The API accepts tool ids matching `^[a-zA-Z0-9_-]+$`; ids made by other providers may not. */
function wireToolId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, '_') || 'toolu_none';
}

type WireUsage = Partial<Record<'input_tokens' | 'output_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens', number | null>>;

/** Input tokens count cached ones too (Anthropic reports them apart), as OpenAI's prompt_tokens does. */
function usageOf(usage: WireUsage | null | undefined): CompletionUsage | undefined {
  if (!usage || typeof usage !== 'object') return undefined;
  const counted: CompletionUsage = {};
  const inputs = [usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens].filter((n): n is number => typeof n === 'number');
  if (typeof usage.input_tokens === 'number') counted.input_tokens = inputs.reduce((a, b) => a + b, 0);
  if (typeof usage.output_tokens === 'number') counted.output_tokens = usage.output_tokens;
  if (typeof usage.cache_read_input_tokens === 'number') counted.cached_tokens = usage.cache_read_input_tokens;
  if (typeof usage.cache_creation_input_tokens === 'number') counted.cache_write_tokens = usage.cache_creation_input_tokens;
  return counted;
}

/** A stream reports input tokens at its start and the (cumulative) output count at its end. */
function mergeUsage(previous: CompletionUsage | undefined, next: CompletionUsage | undefined): CompletionUsage | undefined {
  if (!next) return previous;
  return { ...previous, ...next };
}

function withUsage(result: CompletionResult, usage: CompletionUsage | undefined): CompletionResult {
  return usage ? { ...result, usage } : result;
}

/** The API's base as the SDK wants it: no query (given apart), no trailing slash or `/v1` (the SDK adds `/v1/...`). */
function sdkBaseUrl(url: URL): string {
  const path = url.pathname.replace(/(?<!\/)\/+$/, '').replace(/\/v1$/, '');
  return `${url.protocol}//${url.host}${path}`;
}

/** The body of an error answer or event: `{ type: 'error', error: { type, message } }`. */
function errorBody(error: APIError): { type?: unknown; message?: unknown } | undefined {
  const body = error.error as { error?: unknown; message?: unknown } | undefined;
  if (!body || typeof body !== 'object') return undefined;
  const inner = body.error;
  return inner && typeof inner === 'object' ? (inner as { type?: unknown; message?: unknown }) : body;
}

function errorType(error: APIError): string | undefined {
  const type = error.type ?? errorBody(error)?.type;
  return typeof type === 'string' ? type : undefined;
}

/** The provider's own explanation of a failed answer (to be passed through cleanCause). */
function errorText(error: APIError): string {
  return explanationOf(errorBody(error), error.message);
}
