/**
 * What every provider built on a vendor's HTTP SDK (OpenAI's, Anthropic's) does the same way: it checks
 * the configuration, retries (see retry.ts), runs each attempt under a watchdog (attempt.ts), and turns
 * whatever an attempt throws (an HTTP status, a broken or refused connection, an abort, a timeout, a
 * stalled stream) into a ProviderError whose message is safe to show. The vendor files keep their wire
 * formats and the few answers only their API gives (handed in as hooks).
 */
import { Attempt } from './attempt';
import { UNREACHABLE_CODES, codeOf, httpUrl, innermostMessage, isAbortError, seconds, urlSecrets } from './failure-details';
import { MAX_LOGGED_TEXT_LENGTH, cleanCause, describeEndpoint, safeDetail } from './redact';
import { RetryableFailure, retryAfterMs, withRetries } from './retry';
import { ProviderError, type CompletionRequest, type CompletionResult, type Provider, type ProviderErrorKind, type ProviderWait, type ToolCall } from './types';

/** What every SDK provider (OpenAI's, Anthropic's) is given beside its key and its endpoint. */
export interface SdkProviderOptions {
  /** Omitted: a placeholder is sent, which keyless compatible servers accept (Anthropic's own endpoint requires one). */
  apiKey?: string;
  /** The service's other secrets (tokens, webhook secrets...), kept out of error messages too. */
  secrets?: () => Iterable<string>;
  /**
   * Per attempt: the longest wait for the answer to start, and, while streaming, the longest silence
   * between two events. Timeouts are not retried. Default 120000.
   */
  timeoutMs?: number;
  /** Retries after a 408/409/429/5xx answer (Anthropic's 529 too) or a failed connection, before any answer arrived. Default 2. */
  maxRetries?: number;
  /** What the SDK sends with instead of Node's fetch: only the warm-up's rehearsal (rehearsal.ts) gives one. */
  fetch?: typeof fetch;
}

/** 'open': no part of the answer has arrived yet; 'stream': receiving it. */
export type Phase = 'open' | 'stream';

/** The part of an SDK's APIError used here (both SDKs have the same shape, as separate classes). */
export interface SdkApiError extends Error {
  readonly status: number | undefined;
  readonly headers: { get(name: string): string | null } | undefined;
  readonly error: unknown;
}

/** The SDK's error classes: in both SDKs every one of them extends APIError. */
export interface SdkErrorClasses<E extends SdkApiError> {
  APIError: abstract new (...args: any[]) => E;
  APIConnectionError: abstract new (...args: any[]) => Error;
  APIConnectionTimeoutError: abstract new (...args: any[]) => Error;
  APIUserAbortError: new () => Error;
}

/** What a vendor's own status rule gets to word its failure like the common ones. */
export interface StatusContext {
  status: number;
  /** `: <the first sentence of the server's own explanation>` (cleanCause); empty when there is none (always for a 401). */
  suffix: string;
  /** `; retry after <time>` when the answer asked for a wait, else empty. */
  after: string;
  /** `failure` as a RetryableFailure when the server's x-should-retry says so, or by default when it says nothing. */
  retryable(defaultRetryable: boolean, failure: ProviderError): ProviderError | RetryableFailure;
}

export interface HttpProviderConfig<E extends SdkApiError> {
  /** Names the provider in every error: `<name>: <message>`. */
  name: string;
  apiKey: string | undefined;
  baseUrl: string;
  /** The service's other secrets (tokens, webhook secrets...), which the vendor's text must not show either. */
  secrets?: () => Iterable<string>;
  /** Default 120000. */
  timeoutMs?: number;
  /** Default 2. */
  maxRetries?: number;
  errors: SdkErrorClasses<E>;
  /** The vendor's own host: it cannot be used without a key. */
  vendorHost: string;
  /** Completes `no API key configured (...)`. */
  missingKeyHint: string;
  /** The provider's own explanation of a failed answer (passed through cleanCause before use). */
  errorText(error: E): string;
  /** An APIError without a status: an error event inside a 200 stream. */
  streamErrorEvent(error: E, core: HttpProviderCore): ProviderError;
  /** Statuses the vendor words its own way; undefined leaves the status to the common rules. Not asked about 401/403. */
  statusFailure?(error: E, context: StatusContext, core: HttpProviderCore): ProviderError | RetryableFailure | undefined;
  /** How tool calls are named in errors and defaulted. */
  toolCalls: {
    /** Default id prefix, e.g. `call_` (followed by the call's index). */
    idPrefix: string;
    /** `malformed tool call (no <nameNoun>)`. */
    nameNoun: string;
    /** What the API calls a call's arguments. */
    argumentsNoun: 'arguments' | 'input';
    /** The finish reason of an answer cut off at the token limit. */
    cutOffReason: string;
  };
  /** While streaming, before any text was shown: whether this failure may be retried (default: none is). */
  retryMidStream?(error: ProviderError): boolean;
  /** What the SDK sends with instead of Node's fetch: only the warm-up's rehearsal (rehearsal.ts) gives one. */
  fetch?: typeof fetch;
}

/** An SDK stream: events, and the controller that closes its connection. */
export type SdkStream<Event> = AsyncIterable<Event> & { controller: AbortController };

/** Joins a streamed answer: `add` returns the text piece an event carries ('' for none). */
export interface StreamAssembler<Event> {
  add(event: Event): string;
  result(): CompletionResult;
}

/** The vendor's wire format, from which the core makes the Provider. */
export interface WireParts<Body, Event> {
  buildBody(request: CompletionRequest): Body;
  /** One whole (not streamed) answer. */
  complete(body: Body, attempt: Attempt): Promise<CompletionResult>;
  /** Opens a streamed answer. */
  openStream(body: Body, attempt: Attempt): Promise<SdkStream<Event>>;
  /** A new assembler for one streamed attempt. */
  assembler(): StreamAssembler<Event>;
  /** Every model (the SDK follows the pages). */
  models(attempt: Attempt): AsyncIterable<{ id: string }>;
  /** listModels sorts the ids; otherwise they stay in the API's order. */
  sortModels: boolean;
}

export interface HttpProviderCore {
  readonly name: string;
  /** The base URL when it parses and is http(s). */
  readonly url: URL | undefined;
  /** The base URL as it may be shown. */
  readonly endpoint: string;
  readonly isVendorHost: boolean;
  readonly maxRetries: number;
  readonly timeoutMs: number;
  /**
   * Options every SDK client gets: no SDK retries, our watchdog governs, no console logging, and the
   * fetch it sends with (the one `preconnect` sends with: Node's, whose pool then holds the connection).
   */
  readonly clientOptions: { apiKey: string; maxRetries: 0; timeout: number; logLevel: 'off'; fetch: typeof fetch };
  fail(kind: ProviderErrorKind, message: string, status?: number): ProviderError;
  /** Text from the server or the user, redacted of the configured secrets and shortened. */
  detail(value: unknown, maxLength?: number): string;
  /** A provider's error text as a client may see it: first sentence, no stack frames or paths, redacted. */
  cause(value: unknown): string;
  /** `failure` carrying the provider's whole text (redacted) for the log; returns it. */
  withProviderText<T extends ProviderError | RetryableFailure>(failure: T, text: unknown): T;
  /** Per-request SDK options for one attempt. */
  requestOptions(attempt: Attempt): { signal: AbortSignal; maxRetries: 0; timeout: number };
  /** A tool call of the answer, its arguments parsed (a string as JSON). */
  toolCall(index: number, id: unknown, name: unknown, args: unknown, finishReason: string | null): ToolCall;
  /**
   * The Provider: checks, retries and failure mapping around the vendor's wire format. Its `warmUp`
   * opens the connection to the provider's origin ahead (preconnect).
   */
  provider<Body, Event>(wire: WireParts<Body, Event>): Provider;
}

const PLACEHOLDER_KEY = 'no-key';
/**
 * The longest wait for the answer to the request that opens the provider's connection ahead (preconnect).
 * A connection still being made then is not given up: only the request is, and the pool keeps what connects.
 */
const PRECONNECT_TIMEOUT_MS = 2_000;
/** What of an answer to the OPTIONS is read (an answer to one has no body to speak of). */
const PRECONNECT_MAX_BODY_BYTES = 64 * 1024;

export function createHttpProvider<E extends SdkApiError>(config: HttpProviderConfig<E>): HttpProviderCore {
  const { name, apiKey, baseUrl, errors } = config;
  const timeoutMs = config.timeoutMs ?? 120_000;
  const maxRetries = config.maxRetries ?? 2;
  const endpoint = describeEndpoint(baseUrl);
  // Whatever of the configuration could be a credential, and the service's other secrets, for redaction.
  const own = [apiKey, ...urlSecrets(baseUrl)];
  const secrets = () => ({ own, known: config.secrets?.() ?? [] });
  const url = httpUrl(baseUrl);
  const isVendorHost = url?.hostname === config.vendorHost;
  // The SDK's own timeout only covers the wait for headers; ours (Attempt) governs, so it is set longer.
  const sdkTimeout = timeoutMs + 5_000;

  const fail = (kind: ProviderErrorKind, message: string, status?: number) => new ProviderError(name, kind, `${name}: ${message}`, status);
  const detail = (value: unknown, maxLength?: number) => safeDetail(value, secrets(), maxLength);
  const cause = (value: unknown) => cleanCause(value, secrets());
  function withProviderText<T extends ProviderError | RetryableFailure>(failure: T, text: unknown): T {
    const target: ProviderError = failure instanceof RetryableFailure ? failure.error : (failure as ProviderError);
    const logged = detail(text, MAX_LOGGED_TEXT_LENGTH);
    if (logged) target.providerText = logged;
    return failure;
  }
  const cancelled = () => fail('cancelled', 'request cancelled');

  /** Why no request can be sent with this configuration, or undefined. */
  function refusal(): ProviderError | undefined {
    if (!url) return fail('not_configured', `invalid base URL ${endpoint}`);
    // fetch refuses such URLs; say so plainly rather than as a connection failure.
    if (url.username || url.password) {
      return fail('not_configured', `the base URL ${endpoint} must not contain credentials (user:password@); use api_key`);
    }
    if (!apiKey && isVendorHost) return fail('not_configured', `no API key configured (${config.missingKeyHint})`);
    return undefined;
  }

  function ready(signal: AbortSignal | undefined): void {
    const refused = refusal();
    if (refused) throw refused;
    if (signal?.aborted) throw cancelled();
  }

  const send = config.fetch ?? fetch;

  /**
   * Opens a connection to the provider's origin ahead of the first request (TCP, and TLS's handshake for
   * https), which that request then finds idle in the pool of the fetch the SDK sends with: an OPTIONS of
   * the origin, without the key, the base URL's path or query, or any content; a redirect is not followed.
   * (Not a HEAD: Node's fetch closes the connection after every HEAD, undici's guard against servers that
   * send a body to one.)
   * Nothing when no request would be sent (an invalid base URL, credentials in it, a vendor's host
   * without a key). Never fails (an unreachable provider is the first request's to report) and settles
   * within PRECONNECT_TIMEOUT_MS, or once `ended` (the warm-up's end: a first turn, stop) aborts.
   */
  async function preconnect(_model: string, ended?: AbortSignal): Promise<void> {
    if (!url || refusal()) return;
    const timeout = AbortSignal.timeout(PRECONNECT_TIMEOUT_MS);
    try {
      const response = await send(`${url.origin}/`, { method: 'OPTIONS', redirect: 'manual', signal: ended ? AbortSignal.any([ended, timeout]) : timeout });
      // Read to its end, so the connection goes back to the pool; a body longer than an answer to an
      // OPTIONS has is not read on (the connection is then let go: this request holds no more than that).
      const reader = response.body?.getReader();
      for (let read = 0; reader;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        read += chunk.value.byteLength;
        if (read > PRECONNECT_MAX_BODY_BYTES) {
          await reader.cancel();
          break;
        }
      }
    } catch {
      // Unreachable, refused, slow: the first request meets the same and says so to whom it concerns.
    }
  }

  function requestOptions(attempt: Attempt) {
    return { signal: attempt.signal, maxRetries: 0 as const, timeout: sdkTimeout };
  }

  /** Turns anything thrown during an attempt into the error the caller sees (or a retryable one). */
  function failureOf(error: unknown, attempt: Attempt, phase: Phase): ProviderError | RetryableFailure {
    if (error instanceof ProviderError || error instanceof RetryableFailure) return error;
    if (attempt.cancelled) return cancelled();
    if (attempt.timedOut || error instanceof errors.APIConnectionTimeoutError) {
      return phase === 'open' ? fail('timeout', `no response within ${seconds(timeoutMs)}`) : fail('timeout', `the answer stalled: nothing received for ${seconds(timeoutMs)}`);
    }
    if (error instanceof errors.APIUserAbortError || isAbortError(error)) return cancelled();
    if (error instanceof errors.APIConnectionError) {
      // Only thrown while opening (no answer yet), so always safe to retry.
      return new RetryableFailure(connectionFailure(error, phase));
    }
    if (error instanceof errors.APIError) {
      if (error.status === undefined) return config.streamErrorEvent(error, core);
      return statusFailure(error);
    }
    if (error instanceof SyntaxError) return fail('bad_response', phase === 'stream' ? 'malformed stream' : 'malformed response (not JSON)');
    if (codeOf(error) || (error instanceof TypeError && /terminated|fetch failed/i.test(error.message))) {
      return connectionFailure(error, phase);
    }
    const text = error instanceof Error ? error.message : error;
    return withProviderText(fail('bad_response', `unexpected failure: ${cause(text) || 'unknown'}`), text);
  }

  function connectionFailure(error: unknown, phase: Phase): ProviderError {
    const code = codeOf(error);
    const cause = code ?? (detail(innermostMessage(error), 80) || 'connection failed');
    if (phase === 'stream') return fail('network', `connection lost while receiving the answer (${cause})`);
    if (code && UNREACHABLE_CODES.has(code)) return fail('network', `cannot reach ${endpoint} (${code})`);
    return fail('network', `connection to ${endpoint} failed (${cause})`);
  }

  function statusFailure(error: E): ProviderError | RetryableFailure {
    const raw = error.status === 401 ? '' : config.errorText(error);
    return withProviderText(statusFailureOf(error, cause(raw)), raw);
  }

  function statusFailureOf(error: E, text: string): ProviderError | RetryableFailure {
    const status = error.status as number;
    // A 401's text may quote the key back: it is left out entirely rather than trusted to redaction.
    const suffix = text ? `: ${text}` : '';
    const waitMs = retryAfterMs(error.headers);
    const after = waitMs !== undefined ? `; retry after ${seconds(waitMs)}` : '';
    const hint = error.headers?.get('x-should-retry');
    const retryable = (defaultRetryable: boolean, failure: ProviderError) => {
      if (!(hint === 'true' || (hint !== 'false' && defaultRetryable))) return failure;
      // The wait goes with the error too: a caller that tries again later (the webhook inbox) honours it.
      const waiting = waitMs === undefined ? failure : new ProviderError(failure.provider, failure.kind, failure.message, failure.status, waitMs);
      return new RetryableFailure(waiting, waitMs);
    };

    if (status === 401) return fail('auth', 'authentication failed (HTTP 401); check the API key', status);
    if (status === 403) return fail('auth', `access denied (HTTP 403)${suffix}`, status);
    const own = config.statusFailure?.(error, { status, suffix, after, retryable }, core);
    if (own) return own;
    if (status === 429) return retryable(true, fail('rate_limited', `rate limited (HTTP 429)${after}${suffix}`, status));
    if (status >= 500) return retryable(true, fail('unavailable', `server error (HTTP ${status})${suffix}`, status));
    if (status === 408) return retryable(true, fail('timeout', `the server timed out (HTTP 408)${suffix}`, status));
    if (status === 409) return retryable(true, fail('unavailable', `conflict (HTTP 409)${suffix}`, status));
    if (status === 404) {
      return retryable(false, fail('bad_request', `not found (HTTP 404); check the model and the base URL ${endpoint}${suffix}`, status));
    }
    return retryable(false, fail('bad_request', `request rejected (HTTP ${status})${suffix}`, status));
  }

  async function once<T>(signal: AbortSignal | undefined, run: (attempt: Attempt) => Promise<T>): Promise<T> {
    const attempt = new Attempt(signal, timeoutMs);
    try {
      return await run(attempt);
    } catch (error) {
      throw failureOf(error, attempt, 'open');
    } finally {
      attempt.dispose();
    }
  }

  async function stream<Event>(
    signal: AbortSignal | undefined,
    open: (attempt: Attempt) => Promise<SdkStream<Event>>,
    assembler: StreamAssembler<Event>,
    onDelta: (text: string) => void,
  ): Promise<CompletionResult> {
    const attempt = new Attempt(signal, timeoutMs);
    try {
      let events: SdkStream<Event>;
      try {
        events = await open(attempt);
      } catch (error) {
        throw failureOf(error, attempt, 'open');
      }
      const sdkStream = events;
      attempt.signal.addEventListener('abort', () => sdkStream.controller.abort(), { once: true });
      attempt.touch();
      let delivered = false;
      let callbackFailure: { error: unknown } | undefined;
      try {
        for await (const event of events) {
          attempt.touch();
          const piece = assembler.add(event);
          if (!piece) continue;
          delivered = true;
          try {
            onDelta(piece);
          } catch (error) {
            callbackFailure = { error };
            break; // leaving the loop aborts the request
          }
        }
      } catch (error) {
        const failure = failureOf(error, attempt, 'stream');
        const providerFailure = failure instanceof RetryableFailure ? failure.error : failure;
        // Once text has been shown nothing is retried (it would be shown twice).
        if (!delivered && config.retryMidStream?.(providerFailure)) throw new RetryableFailure(providerFailure);
        throw providerFailure;
      }
      if (callbackFailure) throw callbackFailure.error;
      // The SDK ends the iteration quietly when the request is aborted.
      if (attempt.signal.aborted) throw failureOf(new errors.APIUserAbortError(), attempt, 'stream');
      return assembler.result();
    } finally {
      attempt.dispose();
    }
  }

  function toolCall(index: number, id: unknown, toolName: unknown, args: unknown, finishReason: string | null): ToolCall {
    const { idPrefix, nameNoun, cutOffReason } = config.toolCalls;
    if (typeof toolName !== 'string' || toolName === '') throw fail('bad_response', `malformed tool call (no ${nameNoun})`);
    const parsed = parseArguments(args, finishReason === cutOffReason);
    return {
      id: typeof id === 'string' && id !== '' ? id : `${idPrefix}${index}`,
      name: toolName,
      ...parsed,
    };
  }

  /**
   * The call's arguments as an object. Arguments that cannot be read do not fail the answer (the model
   * wrote them, and can fix them): they come back as `argumentsError`, which the loop hands the model.
   */
  function parseArguments(raw: unknown, cutOff: boolean): Pick<ToolCall, 'arguments' | 'argumentsError'> {
    const noun = config.toolCalls.argumentsNoun;
    let value = raw;
    if (typeof raw === 'string') {
      if (raw.trim() === '') return { arguments: {} };
      try {
        value = JSON.parse(raw);
      } catch (error) {
        const why = cutOff ? ' (the answer was cut off at the token limit)' : '';
        return { arguments: {}, argumentsError: `malformed JSON ${noun}${why}: ${error instanceof Error ? error.message : String(error)}` };
      }
    }
    if (value === undefined || value === null) return { arguments: {} };
    if (typeof value !== 'object' || Array.isArray(value)) {
      return { arguments: {}, argumentsError: `the ${noun} ${noun === 'arguments' ? 'are' : 'is'} not a JSON object` };
    }
    return { arguments: value as Record<string, unknown> };
  }

  function provider<Body, Event>(wire: WireParts<Body, Event>): Provider {
    const retry = <T>(signal: AbortSignal | undefined, attempt: () => Promise<T>, onRetry?: (wait: ProviderWait) => void) => withRetries(attempt, { provider: name, maxRetries, signal, onRetry });
    return {
      name,

      async complete(request: CompletionRequest): Promise<CompletionResult> {
        const { signal, onDelta, onRetry } = request;
        ready(signal);
        const body = wire.buildBody(request);
        return retry(
          signal,
          () => (onDelta ? stream(signal, (attempt) => wire.openStream(body, attempt), wire.assembler(), onDelta) : once(signal, (attempt) => wire.complete(body, attempt))),
          onRetry,
        );
      },

      warmUp: preconnect,

      async listModels(signal?: AbortSignal): Promise<string[]> {
        ready(signal);
        return retry(signal, () =>
          once(signal, async (attempt) => {
            const ids = new Set<string>();
            for await (const model of wire.models(attempt)) {
              attempt.touch();
              if (typeof model?.id === 'string') ids.add(model.id);
            }
            return wire.sortModels ? [...ids].sort() : [...ids];
          }),
        );
      },
    };
  }

  const core: HttpProviderCore = {
    name,
    url,
    endpoint,
    isVendorHost,
    maxRetries,
    timeoutMs,
    clientOptions: { apiKey: apiKey ?? PLACEHOLDER_KEY, maxRetries: 0, timeout: sdkTimeout, logLevel: 'off', fetch: send },
    fail,
    detail,
    cause,
    withProviderText,
    requestOptions,
    toolCall,
    provider,
  };
  return core;
}

/**
 * The explanation in an error answer: its body's `message` (the whole body when it has none), or,
 * when the body was not JSON, the SDK's message without the status (HTML tags taken out: proxies answer
 * with HTML pages).
 */
export function explanationOf(body: { message?: unknown } | undefined, sdkMessage: string): string {
  if (body) return typeof body.message === 'string' ? body.message : JSON.stringify(body);
  // Not JSON: the SDK puts `<status> <body text>` in the message.
  return sdkMessage
    .replace(/^\d{3}\s*/, '')
    .replace(/^status code \(no body\)$/, '')
    .replace(/<[^<>]*>/g, ' '); // [^<>]: a run of < no longer scans to the end from each one (review24d)
}
