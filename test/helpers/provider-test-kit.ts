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
export type WithFake<Fake, ProviderOptions, FakeOptions> = (body: (fake: Fake, provider: Provider) => Promise<void>, providerOptions?: ProviderOptions, fakeOptions?: FakeOptions) => Promise<void>;

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
  script(...steps: (FakeHang | FakeError | { text: string; chunks?: number; chunkDelayMs?: number; hangAfterChunks?: number })[]): void;
  waitFor(predicate: (requests: RecordedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
}

/**
 * The cancel tests every provider passes alike (register them inside its cancel `describe`):
 * `retryableStatus` is an error status the provider retries.
 */
export function cancelTests<Fake extends CancelTestFake>(withFake: WithFake<Fake, never, never>, providerFailure: ReturnType<typeof failureChecker>, retryableStatus: number): void {
  test('abort mid-stream: cancelled, and the server sees the request aborted', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ text: 'abcdef', chunks: 3, hangAfterChunks: 1 });
      const controller = new AbortController();
      const deltas: string[] = [];
      // The fake hangs after its first piece, past `limit`: returning at all is the abort's doing.
      await providerFailure(
        provider.complete({
          model: 'm',
          messages: hello,
          signal: controller.signal,
          onDelta: (piece) => {
            deltas.push(piece);
            controller.abort();
          },
        }),
        'cancelled',
      );
      assert.deepEqual(deltas, ['ab']);
      await fake.waitFor((requests) => requests[0]?.aborted === true, 3_000);
      assert.equal(fake.requests.length, 1);
    }),
  );

  test('abort while waiting for the answer, and while waiting to retry, is prompt', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ hang: true }, { status: retryableStatus, retryAfter: 30 });
      for (const expectedRequests of [1, 2]) {
        const controller = new AbortController();
        const pending = provider.complete({ model: 'm', messages: hello, signal: controller.signal });
        await fake.waitFor((requests) => requests.length === expectedRequests);
        await tick(50);
        controller.abort();
        // The server hangs and the Retry-After (30 s) is past `limit`: returning at all is the cancel's doing.
        await providerFailure(pending, 'cancelled');
      }
      await fake.waitFor((requests) => requests[0].aborted);
      assert.equal(fake.requests.length, 2, 'no retry after a cancel');
    }),
  );

  test('an already aborted signal sends nothing', limit, () =>
    withFake(async (fake, provider) => {
      await providerFailure(provider.complete({ model: 'm', messages: hello, signal: AbortSignal.abort() }), 'cancelled');
      assert.equal(fake.requests.length, 0);
    }),
  );

  test('an exception thrown by onDelta reaches the caller unchanged and ends the request', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ text: 'abcdef', chunks: 3, chunkDelayMs: 50 });
      const thrown = new Error('consumer broke');
      await assert.rejects(
        provider.complete({
          model: 'm',
          messages: hello,
          onDelta: () => {
            throw thrown;
          },
        }),
        (error) => error === thrown,
      );
      await fake.waitFor((requests) => requests[0].aborted);
    }),
  );
}

/** What the shared failure tests need of a vendor. */
export interface SharedFailureVendor<Fake extends CancelTestFake, FakeOptions extends { apiKey?: string }> {
  name: string;
  key: string;
  withFake: WithFake<Fake, { maxRetries?: number; timeoutMs?: number }, FakeOptions>;
  providerFailure: ReturnType<typeof failureChecker>;
  create(options: { apiKey: string; baseUrl: string; maxRetries: number }): Provider;
  /** The path of the base URL that users configure (`/v1` for OpenAI, none for Anthropic). */
  basePath: string;
}

/**
 * The failure tests every HTTP provider passes alike, since they share http-provider.ts (register
 * them inside its failures `describe`); the vendor files keep the tests of their own wire formats.
 */
export function sharedFailureTests<Fake extends CancelTestFake, FakeOptions extends { apiKey?: string }>(vendor: SharedFailureVendor<Fake, FakeOptions>): void {
  const { name, key, withFake, providerFailure, create, basePath } = vendor;

  test('401 is an auth error holding no part of the key, anywhere', limit, () =>
    withFake(
      async (fake, provider) => {
        for (const onDelta of [undefined, () => {}]) {
          const error = await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta }), 'auth', new RegExp(`^${name}: authentication failed \\(HTTP 401\\); check the API key$`));
          assert.equal(error.status, 401);
          assertHoldsNoKey(error, key);
        }
        assert.equal(fake.requests.length, 2, '401 is not retried');
        assertHoldsNoKey(await providerFailure(provider.listModels!(), 'auth'), key);
      },
      {},
      // The fake expects another key than the provider sends.
      { apiKey: 'sk-the-right-key-000000000000' } as FakeOptions,
    ),
  );

  test('429 with Retry-After: 1, then success: the wait honours the header', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ status: 429, retryAfter: 1 }, { text: 'finally' });
      const result = await provider.complete({ model: 'm', messages: hello });
      assert.equal(result.text, 'finally');
      assert.equal(fake.requests.length, 2);
      const waited = fake.requests[1].receivedAt - fake.requests[0].receivedAt;
      assert.ok(waited >= 950, `waited ${waited} ms, Retry-After asked for 1000`);
    }),
  );

  test('429 asking for a wait beyond a minute fails at once, naming the wait', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ status: 429, retryAfter: 3600 });
      const error = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'rate_limited', /rate limited \(HTTP 429\); retry after 3600 s/);
      assert.equal(error.status, 429);
      assert.equal(fake.requests.length, 1);
    }),
  );

  test('500 twice, then success (streamed: retried before the first byte)', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.script({ status: 500 }, { status: 500 }, { text: 'third time lucky' });
        const deltas: string[] = [];
        const result = await provider.complete({ model: 'm', messages: hello, onDelta: (piece) => deltas.push(piece) });
        assert.equal(result.text, 'third time lucky');
        assert.equal(deltas.join(''), 'third time lucky');
        assert.equal(fake.requests.length, 3);
      },
      { maxRetries: 2 },
    ),
  );

  test('a 500 or 400 whose text holds a stack trace: the message has status and first sentence only; the raw text, redacted, is kept for the log', limit, () =>
    withFake(
      async (fake, provider) => {
        const raw = stackTraceText(key);
        fake.script({ status: 500, body: { type: 'error', error: { type: 'api_error', message: raw } } });
        const error = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'unavailable');
        assert.equal(error.message, `${name}: server error (HTTP 500): Internal failure in the router.`);
        assertCleanCause(error, key);
        assert.match(error.providerText ?? '', /at handle \(\/srv\/gateway\/app\/router\.js:42:13\)/, 'the raw text is kept for the log');
        assert.ok(!(error.providerText ?? '').includes(key), 'the raw text is redacted');
        fake.script({ status: 400, body: raw });
        const plain = await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: () => {} }), 'bad_request');
        assert.equal(plain.message, `${name}: request rejected (HTTP 400): Internal failure in the router.`);
        assertCleanCause(plain, key);
      },
      { maxRetries: 0 },
    ),
  );

  test('no answer within timeoutMs is a timeout error (not retried)', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.script({ hang: true });
        const error = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'timeout', /no response within 300 ms/);
        assert.equal(error.status, undefined);
        assert.equal(fake.requests.length, 1);
        await fake.waitFor((requests) => requests[0].aborted);
      },
      { timeoutMs: 300 },
    ),
  );

  test('connection refused is a network error naming the URL', limit, async () => {
    const url = `http://127.0.0.1:${await freePort()}${basePath}`;
    const provider = create({ apiKey: key, baseUrl: url, maxRetries: 1 });
    const error = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'network');
    assert.equal(error.message, `${name}: cannot reach ${url} (ECONNREFUSED)`);
    await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: () => {} }), 'network', /cannot reach/);
    await providerFailure(provider.listModels!(), 'network', /ECONNREFUSED/);
  });

  test('the URL in a message carries no credentials or query', limit, async () => {
    const port = await freePort();
    const withQuery = create({ apiKey: key, baseUrl: `http://127.0.0.1:${port}${basePath}?api-key=${key}`, maxRetries: 0 });
    const error = await providerFailure(withQuery.complete({ model: 'm', messages: hello }), 'network');
    assert.equal(error.message, `${name}: cannot reach http://127.0.0.1:${port}${basePath} (ECONNREFUSED)`);
    const withUser = create({ apiKey: key, baseUrl: `http://user:hunter2@127.0.0.1:${port}${basePath}`, maxRetries: 0 });
    const refused = await providerFailure(withUser.complete({ model: 'm', messages: hello }), 'not_configured', /must not contain credentials/);
    assert.ok(!refused.message.includes('hunter2'), refused.message);
  });
}

/** A vendor's answer text with a stack trace and server paths in it, and a key quoted back. */
export function stackTraceText(key: string): string {
  return [
    `Internal failure in the router. TypeError: Cannot read properties of undefined (reading 'model') for key ${key}`,
    '    at handle (/srv/gateway/app/router.js:42:13)',
    '    at Layer.process (/srv/gateway/node_modules/express/lib/router/layer.js:95:5)',
    '    at C:\\gateway\\app\\main.js:7:1',
  ].join('\n');
}

/** What a client must never see in a provider failure: stack frames, file paths, the key. */
export function assertCleanCause(error: Error, key: string): void {
  assert.doesNotMatch(error.message, /\sat\s/, `no stack frame in: ${error.message}`);
  assert.doesNotMatch(error.message, /\/srv\/|\.js:\d|[A-Za-z]:\\|TypeError/, `no path or raw text in: ${error.message}`);
  assertHoldsNoKey(error, key);
}
