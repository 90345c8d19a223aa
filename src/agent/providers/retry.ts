/**
 * Retrying a provider call that failed before any of its answer arrived (429, 5xx, connection
 * errors). Ours rather than the vendor SDK's: the SDK sleeps for whatever Retry-After says with no upper
 * bound and its sleep ignores the abort signal, so a cancel could wait minutes.
 */
import { ProviderError, type ProviderWait } from './types';

/** Thrown by an attempt whose failure may be retried; `error` is what the caller sees if it is not. */
export class RetryableFailure extends Error {
  constructor(
    readonly error: ProviderError,
    /** What the provider asked for (Retry-After); otherwise exponential backoff applies. */
    readonly retryAfterMs?: number,
  ) {
    super(error.message);
    this.name = 'RetryableFailure';
  }
}

export interface RetryOptions {
  provider: string;
  /** Retries after the first attempt. */
  maxRetries: number;
  signal?: AbortSignal;
  /** First backoff delay; doubles each retry, with up to 25% jitter taken off. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the failure is reported at once. */
  maxRetryAfterMs?: number;
  /** Told before each wait (the turn says it is waiting: `turn.retrying`). */
  onRetry?: (wait: ProviderWait) => void;
}

export const DEFAULT_BASE_DELAY_MS = 500;
export const DEFAULT_MAX_DELAY_MS = 8_000;
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

export async function withRetries<T>(attempt: (index: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const baseDelay = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
  const maxDelay = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  const maxRetryAfter = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
  for (let index = 0; ; index++) {
    try {
      return await attempt(index);
    } catch (failure) {
      if (!(failure instanceof RetryableFailure)) throw failure;
      if (index >= options.maxRetries) throw failure.error;
      const requested = failure.retryAfterMs;
      if (requested !== undefined && requested > maxRetryAfter) throw failure.error;
      const delay = requested !== undefined ? Math.max(0, requested) : Math.min(baseDelay * 2 ** index, maxDelay) * (1 - Math.random() * 0.25);
      const { kind, status } = failure.error;
      if (kind !== 'cancelled') options.onRetry?.({ reason: kind, ...(status !== undefined ? { status } : {}), retry_in_ms: Math.round(delay) });
      await sleep(delay, options.signal, options.provider);
    }
  }
}

/** Milliseconds a response asks to wait: `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. */
export function retryAfterMs(headers: { get(name: string): string | null } | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Waits `ms`, or rejects with a 'cancelled' ProviderError as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal | undefined, provider: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const cancelled = () => new ProviderError(provider, 'cancelled', `${provider}: request cancelled`);
    if (signal?.aborted) return reject(cancelled());
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
