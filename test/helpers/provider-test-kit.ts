/**
 * The preamble the provider tests share (test/provider-*.test.ts): a conversation, the per-test time
 * limit, a runner that starts a fake vendor server and a provider pointed at it, and the assertions on
 * the errors a provider reports.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { ProviderError, type ChatMessage, type Provider, type ProviderErrorKind } from '../../src/agent/providers/types';
import type { FakeError, FakeHang, RecordedRequest } from './fake-http';

export const hello: ChatMessage[] = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'hello' },
];

export const limit = { timeout: 15_000 };

export const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs a test body against a fresh fake server and a provider pointed at it; the fake is closed afterwards. */
export type WithFake<Fake, ProviderOptions, FakeOptions> = (
  body: (fake: Fake, provider: Provider) => Promise<void>,
  providerOptions?: ProviderOptions,
  fakeOptions?: FakeOptions,
) => Promise<void>;

/** A `withFake` for one vendor: the provider gets `key`, the fake's URL and a 5 s timeout unless the test says otherwise. */
export function fakeRunner<Fake extends { url: string; close(): Promise<void> }, ProviderOptions extends object, FakeOptions>(
  start: (options: FakeOptions) => Promise<Fake>,
  create: (options: ProviderOptions & { apiKey: string; baseUrl: string; timeoutMs: number }) => Provider,
  key: string,
): WithFake<Fake, ProviderOptions, FakeOptions> {
  return async (body, providerOptions = {} as ProviderOptions, fakeOptions = {} as FakeOptions) => {
    const fake = await start(fakeOptions);
    try {
      await body(fake, create({ apiKey: key, baseUrl: fake.url, timeoutMs: 5_000, ...providerOptions }));
    } finally {
      await fake.close();
    }
  };
}

/**
 * For one provider: awaits a rejection and checks it is a ProviderError of `kind` named after the
 * provider (`<provider>: ...`), matching `message` when given; returns it for more checks.
 */
export function failureChecker(provider: string) {
  return async function providerFailure(promise: Promise<unknown>, kind: ProviderErrorKind, message?: RegExp): Promise<ProviderError> {
    const error = await promise.then(
      (value) => assert.fail(`expected a ${kind} error, got ${JSON.stringify(value)}`),
      (e: unknown) => e,
    );
    assert.ok(error instanceof ProviderError, `expected a ProviderError, got ${String(error)}`);
    assert.equal(error.kind, kind, error.message);
    assert.equal(error.provider, provider);
    assert.match(error.message, new RegExp(`^${provider}: `));
    if (message) assert.match(error.message, message);
    return error;
  };
}

/** Every 5-character piece of the key, searched in everything the error exposes. */
export function assertHoldsNoKey(error: Error, key: string): void {
  const own = Object.getOwnPropertyNames(error).map((name) => String((error as unknown as Record<string, unknown>)[name]));
  const blob = [JSON.stringify(error), String(error), error.stack ?? '', error.message, ...own, String(error.cause ?? '')].join('\n');
  for (let i = 0; i + 5 <= key.length; i++) {
    const piece = key.slice(i, i + 5);
    assert.ok(!blob.includes(piece), `the error exposes "${piece}" of the key:\n${blob}`);
  }
  assert.equal(error.cause, undefined, 'no raw vendor error is kept');
}

/** A port nobody listens on (bound, then released). */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** What the shared cancel tests script and watch; every vendor fake has it. */
export interface CancelTestFake {
  readonly requests: RecordedRequest[];
  script(...steps: (FakeHang | FakeError | { text: string; chunks: number; chunkDelayMs: number })[]): void;
  waitFor(predicate: (requests: RecordedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
}

/**
 * The cancel tests every provider passes alike (register them inside its cancel `describe`):
 * `retryableStatus` is an error status the provider retries.
 */
export function cancelTests<Fake extends CancelTestFake>(
  withFake: WithFake<Fake, never, never>,
  providerFailure: ReturnType<typeof failureChecker>,
  retryableStatus: number,
): void {
  test('abort while waiting for the answer, and while waiting to retry, is prompt', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ hang: true }, { status: retryableStatus, retryAfter: 30 });
      for (const expectedRequests of [1, 2]) {
        const controller = new AbortController();
        const pending = provider.complete({ model: 'm', messages: hello, signal: controller.signal });
        await fake.waitFor((requests) => requests.length === expectedRequests);
        await tick(50);
        const started = Date.now();
        controller.abort();
        await providerFailure(pending, 'cancelled');
        assert.ok(Date.now() - started < 1_000, 'the cancel did not wait for the server or the Retry-After');
      }
      await fake.waitFor((requests) => requests[0].aborted);
      assert.equal(fake.requests.length, 2, 'no retry after a cancel');
    }));

  test('an already aborted signal sends nothing', limit, () =>
    withFake(async (fake, provider) => {
      await providerFailure(provider.complete({ model: 'm', messages: hello, signal: AbortSignal.abort() }), 'cancelled');
      assert.equal(fake.requests.length, 0);
    }));

  test('an exception thrown by onDelta reaches the caller unchanged and ends the request', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ text: 'abcdef', chunks: 3, chunkDelayMs: 50 });
      const thrown = new Error('consumer broke');
      await assert.rejects(
        provider.complete({ model: 'm', messages: hello, onDelta: () => { throw thrown; } }),
        (error) => error === thrown,
      );
      await fake.waitFor((requests) => requests[0].aborted);
    }));
}
