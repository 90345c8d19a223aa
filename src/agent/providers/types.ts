import type { StoredAttachment } from '../attachments/content';

/**
 * The one interface every model provider implements (OpenAI-compatible, Anthropic, the editor's
 * language models). Provider-neutral: nothing here names a vendor's wire format.
 */

export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  /**
   * Why the provider's arguments could not be read (malformed JSON, not an object); `arguments` is then
   * empty. The loop answers the call with this error instead of running the tool, so the model can retry.
   */
  argumentsError?: string;
}

/** An image given to a vision model: its type (told by its bytes) and its bytes in base64. */
export interface ImageInput {
  mime: string;
  base64: string;
}

export type ChatMessage =
  | {
      role: 'system' | 'user';
      content: string;
      /** Files the user attached (stored refs); the agent turns them into `images` or notes in `content` before a provider sees them. */
      attachments?: readonly StoredAttachment[];
      /** Images for a vision model, after the text. */
      images?: readonly ImageInput[];
      /**
       * The turn's note (time, git, sender), sent last and different in every turn: a provider that
       * marks what it may cache marks what comes before it.
       */
      moment?: true;
    }
  | { role: 'assistant'; content: string; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; name: string; content: string };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of an object. */
  parameters: Record<string, unknown>;
}

export interface CompletionRequest {
  model: string;
  temperature?: number;
  max_tokens?: number;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  /** Aborting rejects with ProviderError kind 'cancelled' and closes the connection. */
  signal?: AbortSignal;
  /** When present the answer is streamed and this is called with each text piece, in order. */
  onDelta?: (text: string) => void;
  /** A failure that may pass is asked again after `retry_in_ms` (retry.ts): called before the wait. */
  onRetry?: (wait: ProviderWait) => void;
}

/** A retry's wait, as `turn.retrying` tells it (docs/protocol.md). */
export interface ProviderWait {
  reason: Exclude<ProviderErrorKind, 'cancelled'>;
  status?: number;
  retry_in_ms: number;
}

export interface CompletionUsage {
  /** Every input token of the call, cached ones included. */
  input_tokens?: number;
  output_tokens?: number;
  /** Of the input tokens, those read from the provider's prompt cache (billed at the cached price). */
  cached_tokens?: number;
  /** Of the input tokens, those written to the provider's prompt cache (Anthropic bills them apart). */
  cache_write_tokens?: number;
  /** Counted locally (the provider reports no figures), not the provider's own. */
  estimated?: boolean;
}

export interface CompletionResult {
  text: string;
  tool_calls: ToolCall[];
  /** As the provider reports it (e.g. 'stop', 'length', 'tool_calls'); null when it reports none. */
  finish_reason: string | null;
  usage?: CompletionUsage;
  /** The model's context window in tokens, when the provider tells it (vscode.lm's maxInputTokens). */
  context_window?: number;
}

export interface Provider {
  readonly name: string;
  complete(request: CompletionRequest): Promise<CompletionResult>;
  listModels?(signal?: AbortSignal): Promise<string[]>;
  /** The model's context window as its server tells it (a local server; undefined when it does not say). */
  contextWindow?(model: string): Promise<number | undefined>;
  /** Asks ahead what a first request of `model` would wait for (its window; its connection, opened), once the service listens; given up once `ended` aborts. */
  warmUp?(model: string, ended?: AbortSignal): Promise<void>;
}

export type ProviderErrorKind = 'auth' | 'rate_limited' | 'timeout' | 'unavailable' | 'bad_request' | 'bad_response' | 'network' | 'cancelled' | 'not_configured';

/**
 * Every failure a provider reports. The message names the provider and the cause and is safe to show
 * to a user: it never holds a credential (providers redact the vendor's own text before using it),
 * and no raw vendor error is kept as `cause`, so serializing the error cannot leak one either. It
 * holds no stack trace or raw vendor text either: only the first sentence of the vendor's explanation,
 * without paths (see cleanCause).
 */
export class ProviderError extends Error {
  /**
   * The provider's own error text in full, redacted of credentials but with its stack frames and
   * paths: for the log only (the logger writes an error's own fields); never put in a client's error.
   */
  providerText?: string;

  constructor(
    readonly provider: string,
    readonly kind: ProviderErrorKind,
    message: string,
    /** HTTP status of the provider's answer, when there was one. */
    readonly status?: number,
    /** How long the provider asked to wait (Retry-After), so a caller retrying later can honour it. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}
