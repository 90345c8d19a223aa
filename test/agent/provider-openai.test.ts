import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createOpenAIProvider, type OpenAIProviderOptions } from '../../src/agent/providers/openai';
import { cleanCause, safeDetail } from '../../src/agent/providers/redact';
import { redactVendorText } from '../../src/log/redact';
import { startFakeOpenAI, type FakeOpenAI, type FakeOpenAIOptions } from '../helpers/fake-openai';
import { assertHoldsNoKey, cancelTests, failureChecker, fakeRunner, hello, limit, sharedFailureTests } from '../helpers/provider-test-kit';

const KEY = 'sk-Zq8Vw3Lp0Xy7Rt5Nm2Kb';
const withFake = fakeRunner<FakeOpenAI, OpenAIProviderOptions, FakeOpenAIOptions>(startFakeOpenAI, createOpenAIProvider, KEY);
const providerFailure = failureChecker('openai');

describe('openai provider: answers', () => {
  test('text, not streamed: request body, headers, result and usage', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ text: 'Hi there!', usage: { prompt_tokens: 7, completion_tokens: 3 } });
      const result = await provider.complete({ model: 'fake-model', temperature: 0.2, max_tokens: 50, messages: hello });
      assert.deepEqual(result, { text: 'Hi there!', tool_calls: [], finish_reason: 'stop', usage: { input_tokens: 7, output_tokens: 3 } });
      assert.equal(fake.requests.length, 1);
      const [request] = fake.requests;
      assert.equal(request.method, 'POST');
      assert.equal(request.path, '/v1/chat/completions');
      assert.equal(request.headers.authorization, `Bearer ${KEY}`);
      assert.equal(request.body.model, 'fake-model');
      assert.equal(request.body.temperature, 0.2);
      assert.equal(request.body.max_tokens, 50, 'compatible servers get max_tokens');
      assert.notEqual(request.body.stream, true);
      assert.deepEqual(request.body.messages, [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello' },
      ]);
    }),
  );

  test('text, streamed: deltas arrive in order and join to the whole text', limit, () =>
    withFake(async (fake, provider) => {
      const text = 'The quick brown fox jumps over the lazy dog.';
      fake.script({ text, chunks: 6, chunkDelayMs: 5 });
      const deltas: string[] = [];
      const result = await provider.complete({ model: 'fake-model', messages: hello, onDelta: (piece) => deltas.push(piece) });
      assert.equal(deltas.length, 6);
      assert.equal(deltas.join(''), text);
      assert.equal(result.text, text);
      assert.equal(result.finish_reason, 'stop');
      assert.ok(result.usage && typeof result.usage.output_tokens === 'number', 'usage is asked for and reported');
      assert.equal(fake.requests[0].body.stream, true);
      assert.deepEqual(fake.requests[0].body.stream_options, { include_usage: true });
    }),
  );

  test('the default answer echoes the last user message', limit, () =>
    withFake(async (_fake, provider) => {
      const result = await provider.complete({ model: 'm', messages: [{ role: 'user', content: 'ping' }] });
      assert.equal(result.text, 'echo: ping');
    }),
  );

  test('tool calls streamed across chunks are assembled, with parsed arguments', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({
        text: 'Let me look.',
        tool_calls: [
          { id: 'call_a', name: 'read_file', arguments: { path: 'src/index.ts', lines: [1, 20] } },
          { id: 'call_b', name: 'search', arguments: { query: 'héllo "world"', nested: { deep: true } } },
        ],
        chunks: 7,
      });
      const deltas: string[] = [];
      const result = await provider.complete({
        model: 'fake-model',
        messages: hello,
        tools: [{ name: 'read_file', description: 'Reads a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }],
        onDelta: (piece) => deltas.push(piece),
      });
      assert.equal(deltas.join(''), 'Let me look.');
      assert.equal(result.finish_reason, 'tool_calls');
      assert.deepEqual(result.tool_calls, [
        { id: 'call_a', name: 'read_file', arguments: { path: 'src/index.ts', lines: [1, 20] } },
        { id: 'call_b', name: 'search', arguments: { query: 'héllo "world"', nested: { deep: true } } },
      ]);
      assert.deepEqual(fake.requests[0].body.tools, [
        { type: 'function', function: { name: 'read_file', description: 'Reads a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
      ]);
    }),
  );

  test('tool calls, not streamed, and tool results sent back in the wire format', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ tool_calls: [{ id: 'call_1', name: 'get_time', arguments: {} }] }, { text: 'It is noon.' });
      const first = await provider.complete({ model: 'fake-model', messages: hello });
      assert.deepEqual(first.tool_calls, [{ id: 'call_1', name: 'get_time', arguments: {} }]);
      assert.equal(first.text, '');
      const second = await provider.complete({
        model: 'fake-model',
        messages: [...hello, { role: 'assistant', content: '', tool_calls: first.tool_calls }, { role: 'tool', tool_call_id: 'call_1', name: 'get_time', content: '12:00' }],
      });
      assert.equal(second.text, 'It is noon.');
      assert.deepEqual(fake.requests[1].body.messages.slice(2), [
        { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '12:00' },
      ]);
    }),
  );

  test("tool call arguments that are not JSON come back as the call's argumentsError, streamed or not", limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ tool_calls: [{ name: 'read_file', arguments: '{"path": "a' }] }, { tool_calls: [{ name: 'read_file', arguments: '[1,2]' }] });
      const streamed = await provider.complete({ model: 'm', messages: hello, onDelta: () => {} });
      assert.equal(streamed.tool_calls[0].name, 'read_file');
      assert.deepEqual(streamed.tool_calls[0].arguments, {});
      assert.match(streamed.tool_calls[0].argumentsError ?? '', /^malformed JSON arguments: /);
      const whole = await provider.complete({ model: 'm', messages: hello });
      assert.equal(whole.tool_calls[0].argumentsError, 'the arguments are not a JSON object');
      assert.equal(fake.requests.length, 2, 'not retried');
    }),
  );

  test('no API key: a placeholder is sent, so keyless local servers work', limit, () =>
    withFake(
      async (fake, provider) => {
        assert.equal((await provider.complete({ model: 'local', messages: hello })).text, 'echo: hello');
        assert.match(String(fake.requests[0].headers.authorization), /^Bearer \S+$/);
      },
      { apiKey: undefined },
    ),
  );

  test("no API key for OpenAI's own endpoint is not_configured", limit, async () => {
    const provider = createOpenAIProvider({});
    await providerFailure(provider.complete({ model: 'gpt-4o-mini', messages: hello }), 'not_configured', /API key/);
  });

  test('listModels lists the models endpoint', limit, () =>
    withFake(
      async (fake, provider) => {
        assert.deepEqual(await provider.listModels!(), ['alpha', 'beta', 'gamma']);
        assert.equal(fake.requests[0].method, 'GET');
        assert.equal(fake.requests[0].path, '/v1/models');
        assert.equal(fake.requests[0].headers.authorization, `Bearer ${KEY}`);
      },
      {},
      { models: ['gamma', 'alpha', 'beta'] },
    ),
  );
});

describe('openai provider: failures', () => {
  sharedFailureTests({ name: 'openai', key: KEY, withFake, providerFailure, create: createOpenAIProvider, basePath: '/v1' });

  test('a key quoted in other error bodies is redacted too', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ status: 400, body: { error: { message: `Bad key ${KEY} and masked ${KEY.slice(0, 6)}***${KEY.slice(-4)} and sk-other-123456` } } });
      const error = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'bad_request', /HTTP 400/);
      assertHoldsNoKey(error, KEY);
      assert.ok(!error.message.includes('sk-other'), error.message);
      fake.script({ status: 400, body: { error: { message: 'x'.repeat(5000) } } });
      const long = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'bad_request');
      assert.ok(long.message.length <= 260, `message is truncated (${long.message.length} chars)`);
    }),
  );

  test('429 insufficient_quota is not retried', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ status: 429, body: { error: { message: 'You exceeded your current quota.', type: 'insufficient_quota', code: 'insufficient_quota' } } });
      await providerFailure(provider.complete({ model: 'm', messages: hello }), 'rate_limited', /quota exceeded/);
      assert.equal(fake.requests.length, 1);
    }),
  );

  test('503 forever is unavailable after the retries', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.setDefault({ status: 503 });
        const error = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'unavailable', /server error \(HTTP 503\)/);
        assert.equal(error.status, 503);
        assert.equal(fake.requests.length, 3, 'first try plus maxRetries 2');
      },
      { maxRetries: 2 },
    ),
  );

  test('a connection reset before the answer is retried', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.script({ reset: true }, { text: 'after reset' });
        assert.equal((await provider.complete({ model: 'm', messages: hello })).text, 'after reset');
        assert.equal(fake.requests.length, 2);
      },
      { maxRetries: 1 },
    ),
  );

  test('a connection reset mid-stream is a network error and not retried', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ text: 'abcdefgh', chunks: 4, resetAfterChunks: 2 });
      const deltas: string[] = [];
      await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: (piece) => deltas.push(piece) }), 'network', /connection lost/);
      assert.equal(deltas.join(''), 'abcd');
      assert.equal(fake.requests.length, 1);
    }),
  );

  test('a stream that goes silent is a timeout error', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.script({ text: 'abcdef', chunks: 3, hangAfterChunks: 1 });
        const deltas: string[] = [];
        await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: (piece) => deltas.push(piece) }), 'timeout', /stalled/);
        assert.deepEqual(deltas, ['ab']);
      },
      { timeoutMs: 300 },
    ),
  );

  test('a slow but steady stream is not a timeout (the limit is per silence)', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.script({ text: 'abcdefgh', chunks: 8, chunkDelayMs: 100 });
        assert.equal((await provider.complete({ model: 'm', messages: hello, onDelta: () => {} })).text, 'abcdefgh');
      },
      { timeoutMs: 400 },
    ),
  );

  test('a malformed stream is a bad_response, and so is a body that is not JSON', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ malformed: true }, { malformed: true }, { malformed: 'garbage without any data field\n\n' });
      await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: () => {} }), 'bad_response', /^openai: malformed stream$/);
      await providerFailure(provider.complete({ model: 'm', messages: hello }), 'bad_response', /malformed response/);
      await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: () => {} }), 'bad_response', /malformed stream/);
      assert.equal(fake.requests.length, 3, 'not retried');
    }),
  );
});

describe('openai provider: odd servers', () => {
  test('an error event inside a stream is unavailable, with the redacted detail', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ malformed: `data: {"error":{"message":"upstream provider failed for key ${KEY}","code":502}}\n\n` });
      const error = await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: () => {} }), 'unavailable', /mid-answer: upstream provider failed/);
      assertHoldsNoKey(error, KEY);
    }),
  );

  test('404 names the endpoint to check', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ status: 404 });
      const error = await providerFailure(
        provider.complete({ model: 'fake-missing', messages: hello }),
        'bad_request',
        /not found \(HTTP 404\); check the model and the base URL http:\/\/127\.0\.0\.1:\d+\/v1: The model `fake-missing` does not exist/,
      );
      assert.equal(error.status, 404);
    }),
  );

  test('tool call fragments without ids, and a name repeated in every fragment, still assemble', limit, () =>
    withFake(async (fake, provider) => {
      const events = [
        { choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, function: { name: 'grep', arguments: '{"pat' } }] } }] },
        { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: 'grep', arguments: 'tern": "x"}' } }] } }] },
        { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      ];
      fake.script({ malformed: events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n' });
      const result = await provider.complete({ model: 'm', messages: hello, onDelta: () => {} });
      assert.deepEqual(result.tool_calls, [{ id: 'call_0', name: 'grep', arguments: { pattern: 'x' } }]);
      assert.equal(result.finish_reason, 'tool_calls');
    }),
  );

  test('tool call JSON cut off at the token limit says so', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ tool_calls: [{ name: 'write', arguments: '{"text": "lor' }], finish_reason: 'length' });
      const [call] = (await provider.complete({ model: 'm', messages: hello })).tool_calls;
      assert.match(call.argumentsError ?? '', /cut off at the token limit/);
    }),
  );
});

describe('openai provider: cancel', () => {
  cancelTests(withFake, providerFailure, 429);
});

describe('redaction', () => {
  test('removes keys, masked keys, key-like tokens and fragments of known secrets', () => {
    const secret = 'abcd1234efgh5678ijkl';
    const text = [
      `key ${secret}`,
      'Incorrect API key provided: sk-abc***wxyz.',
      'token sk-proj-AAAA_bbbb-1234 and gsk_abcdef and xai-12345',
      'Authorization: Bearer whatever.token.here',
      `the first part abcd1234 and the last ijkl`,
      'an opaque 9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc',
    ].join('\n');
    const out = redactVendorText(text, { own: [secret] });
    for (const leak of [secret, 'abc***', 'wxyz', 'AAAA_bbbb', 'gsk_abc', 'xai-123', 'whatever', 'abcd1234', 'ijkl', '9f8e7d6c']) {
      assert.ok(!out.includes(leak), `"${leak}" left in: ${out}`);
    }
    assert.match(out, /Incorrect API key provided: \[redacted\]/);
  });

  test('safeDetail makes one line of at most 200 characters', () => {
    const detail = safeDetail(`line one\nline two ${'y'.repeat(400)}`);
    assert.ok(!detail.includes('\n'));
    assert.ok(detail.length <= 200);
    assert.equal(safeDetail({ error: 'x' }), '{"error":"x"}');
  });

  test('cleanCause keeps the first sentence, drops stack frames and paths, keeps URLs', () => {
    assert.equal(cleanCause('ENOENT: no such file /var/lib/models/x.bin while loading'), 'ENOENT: no such file [path] while loading');
    assert.equal(cleanCause('Error: boom\n    at Object.<anonymous> (file:///app/index.mjs:3:9)'), 'Error: boom');
    assert.equal(cleanCause('Upstream https://api.example.com/v1/chat failed. Retry later.'), 'Upstream https://api.example.com/v1/chat failed.');
    assert.equal(cleanCause('Model `gpt-4.1` not found.'), 'Model `gpt-4.1` not found.');
    assert.equal(cleanCause('cannot open C:\\srv\\app.js now'), 'cannot open [path] now');
    assert.equal(cleanCause('at handle (/srv/app/router.js:42:13)'), '');
    assert.equal(cleanCause('boom at async new Gateway (file:///srv/gw.mjs:3:9)'), 'boom');
    assert.equal(cleanCause('NullPointerException at com.acme.Router.route(Router.java:42)'), 'NullPointerException');
    assert.equal(cleanCause('Traceback (most recent call last): File "/srv/app.py", line 42, in handle'), '');
    assert.equal(cleanCause('Service unavailable, retry at 10:30 UTC'), 'Service unavailable, retry at 10:30 UTC');
  });

  test('cleanCause also cuts frames of relative or bundler paths, and a Go goroutine dump', () => {
    assert.equal(cleanCause('Internal error at handle (src/router.js:42:13) at next (src/layer.js:1:2)'), 'Internal error');
    assert.equal(cleanCause('TypeError: x is undefined\n    at handle (webpack:///./src/router.ts:42:13)'), 'TypeError: x is undefined');
    assert.equal(cleanCause('boom at dist/server.cjs:7:1'), 'boom');
    assert.equal(cleanCause('panic: index out of range\n\ngoroutine 1 [running]:\nmain.handler(0x0)\n\t/srv/main.go:12 +0x1d'), 'panic: index out of range');
    // Words that merely follow "at" stay.
    assert.equal(cleanCause('Rate limit reached at org level: retry at 10:30'), 'Rate limit reached at org level: retry at 10:30');
    assert.equal(cleanCause('Model not available at this endpoint'), 'Model not available at this endpoint');
  });
});
