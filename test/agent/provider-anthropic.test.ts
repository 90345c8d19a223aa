import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAnthropicProvider, type AnthropicProviderOptions } from '../../src/agent/providers/anthropic';
import { startFakeAnthropic, type FakeAnthropic, type FakeAnthropicOptions } from '../helpers/fake-anthropic';
import { assertHoldsNoKey, cancelTests, failureChecker, fakeRunner, hello, limit, sharedFailureTests } from '../helpers/provider-test-kit';

const KEY = 'sk-ant-api03-Zq8Vw3Lp0Xy7Rt5Nm2Kb';
const withFake = fakeRunner<FakeAnthropic, AnthropicProviderOptions, FakeAnthropicOptions>(startFakeAnthropic, createAnthropicProvider, KEY);
const providerFailure = failureChecker('anthropic');

describe('anthropic provider: answers', () => {
  test('text, not streamed: request, headers, result and usage', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ text: 'Hi there!', usage: { input_tokens: 7, output_tokens: 3, cache_read_input_tokens: 2 } });
      const result = await provider.complete({ model: 'claude-fake', messages: hello });
      assert.deepEqual(result, { text: 'Hi there!', tool_calls: [], finish_reason: 'end_turn', usage: { input_tokens: 9, output_tokens: 3, cached_tokens: 2, cache_write_tokens: 0 } });
      assert.equal(fake.requests.length, 1);
      const [request] = fake.requests;
      assert.equal(request.method, 'POST');
      assert.equal(request.path, '/v1/messages');
      assert.equal(request.headers['x-api-key'], KEY);
      assert.equal(request.headers.authorization, undefined, 'no bearer token besides the key');
      assert.ok(request.headers['anthropic-version']);
      assert.deepEqual(request.body, {
        model: 'claude-fake',
        max_tokens: 4096,
        system: 'be brief',
        messages: [{ role: 'user', content: 'hello' }],
        stream: false,
      });
    }),
  );

  test('text, streamed: deltas arrive in order and join to the whole text', limit, () =>
    withFake(async (fake, provider) => {
      const text = 'The quick brown fox jumps over the lazy dog.';
      fake.script({ text, chunks: 6, chunkDelayMs: 5, usage: { input_tokens: 11, output_tokens: 10 } });
      const deltas: string[] = [];
      const result = await provider.complete({ model: 'claude-fake', messages: hello, onDelta: (piece) => deltas.push(piece) });
      assert.equal(deltas.length, 6);
      assert.equal(deltas.join(''), text);
      assert.deepEqual(result, { text, tool_calls: [], finish_reason: 'end_turn', usage: { input_tokens: 11, output_tokens: 10, cached_tokens: 0, cache_write_tokens: 0 } });
      assert.equal(fake.requests[0].body.stream, true);
    }),
  );

  test('several system messages join into `system`; temperature and max_tokens pass (temperature within 0..1)', limit, () =>
    withFake(async (fake, provider) => {
      await provider.complete({
        model: 'm',
        temperature: 0.3,
        max_tokens: 50,
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'hi' },
          { role: 'system', content: 'Answer in French.' },
          { role: 'system', content: '   ' },
        ],
      });
      await provider.complete({ model: 'm', temperature: 1.6, messages: [{ role: 'user', content: 'hi' }] });
      const [first, second] = fake.requests.map((r) => r.body);
      assert.equal(first.system, 'You are terse.\n\nAnswer in French.');
      assert.deepEqual(first.messages, [{ role: 'user', content: 'hi' }], 'no system role among the messages');
      assert.equal(first.temperature, 0.3);
      assert.equal(first.max_tokens, 50);
      assert.equal(second.system, undefined, 'no system prompt, no field');
      assert.equal(second.temperature, 1);
    }),
  );

  test('the default answer echoes the last user message', limit, () =>
    withFake(async (_fake, provider) => {
      const result = await provider.complete({ model: 'm', messages: [{ role: 'user', content: 'ping' }] });
      assert.equal(result.text, 'echo: ping');
    }),
  );

  test('assistant tool calls become tool_use blocks and their results tool_result blocks of one user turn', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ text: 'Both done.' });
      const result = await provider.complete({
        model: 'm',
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'read a and b' },
          {
            role: 'assistant',
            content: 'Reading both.',
            tool_calls: [
              { id: 'toolu_1', name: 'read_file', arguments: { path: 'a' } },
              { id: 'toolu_2', name: 'read_file', arguments: { path: 'b' } },
            ],
          },
          { role: 'tool', tool_call_id: 'toolu_1', name: 'read_file', content: 'contents of a' },
          { role: 'tool', tool_call_id: 'toolu_2', name: 'read_file', content: 'contents of b' },
          { role: 'assistant', content: '', tool_calls: [{ id: 'call:3', name: 'list', arguments: {} }] },
          { role: 'tool', tool_call_id: 'call:3', name: 'list', content: '' },
          { role: 'user', content: 'and now?' },
        ],
        tools: [{ name: 'read_file', description: 'Reads a file', parameters: { properties: { path: { type: 'string' } }, required: ['path'] } }],
      });
      assert.equal(result.text, 'Both done.');
      const { body } = fake.requests[0];
      assert.equal(body.system, 'be brief');
      assert.deepEqual(body.messages, [
        { role: 'user', content: 'read a and b' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Reading both.' },
            { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a' } },
            { type: 'tool_use', id: 'toolu_2', name: 'read_file', input: { path: 'b' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'contents of a' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'contents of b' },
          ],
        },
        // No empty text block; an id the API would refuse is made acceptable on both sides.
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_3', name: 'list', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_3' },
            { type: 'text', text: 'and now?' },
          ],
        },
      ]);
      assert.deepEqual(body.tools, [
        {
          name: 'read_file',
          description: 'Reads a file',
          input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        },
      ]);
    }),
  );

  test('a history that starts with the assistant gets an opening user turn; empty turns are left out', limit, () =>
    withFake(async (fake, provider) => {
      await provider.complete({
        model: 'm',
        messages: [
          { role: 'assistant', content: 'Earlier answer.' },
          { role: 'user', content: '' },
          { role: 'assistant', content: 'More.' },
          { role: 'user', content: 'go on' },
        ],
      });
      assert.deepEqual(fake.requests[0].body.messages, [
        { role: 'user', content: '(earlier messages omitted)' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Earlier answer.' },
            { type: 'text', text: 'More.' },
          ],
        },
        { role: 'user', content: 'go on' },
      ]);
    }),
  );

  test('streamed tool_use blocks are assembled from partial JSON, with parsed input', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({
        text: 'Let me look.',
        tool_uses: [
          { id: 'toolu_a', name: 'read_file', input: { path: 'src/index.ts', lines: [1, 20] } },
          { id: 'toolu_b', name: 'search', input: { query: 'héllo "world"', nested: { deep: true } } },
        ],
        chunks: 7,
      });
      const deltas: string[] = [];
      const result = await provider.complete({
        model: 'm',
        messages: hello,
        tools: [{ name: 'read_file', description: 'Reads a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }],
        onDelta: (piece) => deltas.push(piece),
      });
      assert.equal(deltas.join(''), 'Let me look.');
      assert.equal(result.text, 'Let me look.');
      assert.equal(result.finish_reason, 'tool_use');
      assert.deepEqual(result.tool_calls, [
        { id: 'toolu_a', name: 'read_file', arguments: { path: 'src/index.ts', lines: [1, 20] } },
        { id: 'toolu_b', name: 'search', arguments: { query: 'héllo "world"', nested: { deep: true } } },
      ]);
    }),
  );

  test('tool_use, not streamed; a tool with no input gets {}', limit, () =>
    withFake(async (fake, provider) => {
      fake.script(
        {
          tool_uses: [
            { id: 'toolu_1', name: 'get_time', input: {} },
            { id: 'toolu_2', name: 'read', input: { path: 'x' } },
          ],
        },
        { tool_uses: [{ id: 'toolu_3', name: 'get_time', input: {} }] },
      );
      const first = await provider.complete({ model: 'm', messages: hello });
      assert.equal(first.text, '');
      assert.equal(first.finish_reason, 'tool_use');
      assert.deepEqual(first.tool_calls, [
        { id: 'toolu_1', name: 'get_time', arguments: {} },
        { id: 'toolu_2', name: 'read', arguments: { path: 'x' } },
      ]);
      const streamed = await provider.complete({ model: 'm', messages: hello, onDelta: () => assert.fail('no text to stream') });
      assert.deepEqual(streamed.tool_calls, [{ id: 'toolu_3', name: 'get_time', arguments: {} }]);
    }),
  );

  test("tool input that is not JSON comes back as the call's argumentsError, saying when the token limit cut it off", limit, () =>
    withFake(async (fake, provider) => {
      fake.script(
        { tool_uses: [{ name: 'read_file', input: '{"path": "a' }] },
        { tool_uses: [{ name: 'write', input: '{"text": "lor' }], stop_reason: 'max_tokens' },
        { tool_uses: [{ name: 'read_file', input: '[1,2]' }] },
      );
      const first = (await provider.complete({ model: 'm', messages: hello, onDelta: () => {} })).tool_calls[0];
      assert.deepEqual(first.arguments, {});
      assert.match(first.argumentsError ?? '', /^malformed JSON input: /);
      const cut = (await provider.complete({ model: 'm', messages: hello, onDelta: () => {} })).tool_calls[0];
      assert.match(cut.argumentsError ?? '', /^malformed JSON input \(the answer was cut off at the token limit\): /);
      const notObject = (await provider.complete({ model: 'm', messages: hello })).tool_calls[0];
      assert.equal(notObject.argumentsError, 'the input is not a JSON object');
      assert.equal(fake.requests.length, 3, 'not retried');
    }),
  );

  test('a base URL given with /v1, a trailing slash or a query reaches the same endpoint', limit, () =>
    withFake(async (fake) => {
      for (const baseUrl of [`${fake.url}/v1`, `${fake.url}/`, `${fake.url}/v1/`, `${fake.url}/v1?tenant=t1`]) {
        const provider = createAnthropicProvider({ apiKey: KEY, baseUrl });
        assert.equal((await provider.complete({ model: 'm', messages: hello })).text, 'echo: hello');
      }
      assert.deepEqual(
        fake.requests.map((r) => r.path),
        ['/v1/messages', '/v1/messages', '/v1/messages', '/v1/messages?tenant=t1'],
      );
    }),
  );

  test("no API key: a placeholder is sent to a custom endpoint; Anthropic's own is not_configured", limit, async () => {
    await withFake(
      async (fake, provider) => {
        assert.equal((await provider.complete({ model: 'local', messages: hello })).text, 'echo: hello');
        assert.match(String(fake.requests[0].headers['x-api-key']), /^\S+$/);
        assert.equal(fake.requests[0].headers.authorization, undefined);
      },
      { apiKey: undefined },
    );
    const provider = createAnthropicProvider({});
    await providerFailure(provider.complete({ model: 'claude-fake', messages: hello }), 'not_configured', /API key/);
  });

  test("ANTHROPIC_* environment variables are not read behind the config's back", limit, () =>
    withFake(async (fake) => {
      const names = ['ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY'] as const;
      const saved = names.map((name) => [name, process.env[name]] as const);
      process.env.ANTHROPIC_AUTH_TOKEN = 'env-token-should-not-be-sent';
      process.env.ANTHROPIC_BASE_URL = 'http://127.0.0.1:9/elsewhere';
      process.env.ANTHROPIC_API_KEY = 'env-key-should-not-be-sent';
      try {
        const provider = createAnthropicProvider({ baseUrl: fake.url });
        await provider.complete({ model: 'm', messages: hello });
      } finally {
        for (const [name, value] of saved) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      }
      assert.equal(fake.requests.length, 1);
      assert.equal(fake.requests[0].headers.authorization, undefined);
      assert.notEqual(fake.requests[0].headers['x-api-key'], 'env-key-should-not-be-sent');
    }),
  );

  test('listModels lists the models endpoint across pages, in its order', limit, () =>
    withFake(
      async (fake, provider) => {
        assert.deepEqual(await provider.listModels!(), ['gamma', 'alpha', 'beta']);
        assert.deepEqual(
          fake.requests.map((r) => [r.method, r.path.split('?')[0]]),
          [
            ['GET', '/v1/models'],
            ['GET', '/v1/models'],
          ],
        );
        assert.match(fake.requests[1].path, /after_id=alpha/);
        assert.equal(fake.requests[0].headers['x-api-key'], KEY);
      },
      {},
      { models: ['gamma', 'alpha', 'beta'], modelsPageSize: 2 },
    ),
  );
});

describe('anthropic provider: failures', () => {
  sharedFailureTests({ name: 'anthropic', key: KEY, withFake, providerFailure, create: createAnthropicProvider, basePath: '' });

  test('a key quoted in other error bodies is redacted; long text is truncated', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: `Bad key ${KEY} and masked ${KEY.slice(0, 10)}***${KEY.slice(-4)}` } } });
      const error = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'bad_request', /request rejected \(HTTP 400\): Bad key \[redacted\]/);
      assertHoldsNoKey(error, KEY);
      fake.script({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'x'.repeat(5000) } } });
      const long = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'bad_request');
      assert.ok(long.message.length <= 260, `message is truncated (${long.message.length} chars)`);
    }),
  );

  test('529 overloaded forever is unavailable after the retries', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.setDefault({ status: 529 });
        const error = await providerFailure(provider.complete({ model: 'm', messages: hello }), 'unavailable', /^anthropic: overloaded \(HTTP 529\): Overloaded$/);
        assert.equal(error.status, 529);
        assert.equal(fake.requests.length, 3, 'first try plus maxRetries 2');
      },
      { maxRetries: 2 },
    ),
  );

  test('x-should-retry: false is obeyed', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ status: 500, headers: { 'x-should-retry': 'false' } });
      await providerFailure(provider.complete({ model: 'm', messages: hello }), 'unavailable', /server error \(HTTP 500\): Internal server error/);
      assert.equal(fake.requests.length, 1);
    }),
  );

  test('an overloaded_error event before any text is retried; after text it is unavailable', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.script({ text: 'abc', errorAfterChunks: 0 }, { text: 'recovered' });
        const deltas: string[] = [];
        const result = await provider.complete({ model: 'm', messages: hello, onDelta: (piece) => deltas.push(piece) });
        assert.equal(result.text, 'recovered');
        assert.equal(deltas.join(''), 'recovered');
        assert.equal(fake.requests.length, 2);

        fake.script({ text: 'abcdef', chunks: 3, errorAfterChunks: 1 });
        deltas.length = 0;
        await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: (piece) => deltas.push(piece) }), 'unavailable', /the server reported overloaded_error mid-answer: Overloaded/);
        assert.deepEqual(deltas, ['ab']);
        assert.equal(fake.requests.length, 3, 'not retried once text was shown');
      },
      { maxRetries: 1 },
    ),
  );

  test('a connection reset before the answer is retried; mid-stream it is a network error', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.script({ reset: true }, { text: 'after reset' });
        assert.equal((await provider.complete({ model: 'm', messages: hello })).text, 'after reset');
        assert.equal(fake.requests.length, 2);

        fake.script({ text: 'abcdefgh', chunks: 4, resetAfterChunks: 2 });
        const deltas: string[] = [];
        await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: (piece) => deltas.push(piece) }), 'network', /connection lost/);
        assert.equal(deltas.join(''), 'abcd');
        assert.equal(fake.requests.length, 3);
      },
      { maxRetries: 1 },
    ),
  );

  test('a stream that goes silent is a timeout error; a slow but steady one is not', limit, () =>
    withFake(
      async (fake, provider) => {
        fake.script({ text: 'abcdef', chunks: 3, hangAfterChunks: 1 });
        const deltas: string[] = [];
        await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: (piece) => deltas.push(piece) }), 'timeout', /stalled/);
        assert.deepEqual(deltas, ['ab']);
        await fake.waitFor((requests) => requests[0].aborted);

        // Longer in all than the stall window, each gap a tenth of it (a loaded machine's pauses stay well inside).
        fake.script({ text: 'abcdefghijkl', chunks: 12, chunkDelayMs: 100 });
        assert.equal((await provider.complete({ model: 'm', messages: hello, onDelta: () => {} })).text, 'abcdefghijkl');
      },
      { timeoutMs: 1000 },
    ),
  );

  test('a malformed stream is a bad_response, and so is a body that is not JSON or a stream cut short', limit, () =>
    withFake(async (fake, provider) => {
      const start = `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'm', stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } } })}\n\n`;
      const delta = `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"par"}}\n\n`;
      fake.script({ malformed: true }, { malformed: true }, { malformed: start + delta }, { malformed: 'garbage without any event\n\n' });
      await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: () => {} }), 'bad_response', /^anthropic: malformed stream$/);
      await providerFailure(provider.complete({ model: 'm', messages: hello }), 'bad_response', /malformed response/);
      await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: () => {} }), 'bad_response', /ended before the answer was complete/);
      await providerFailure(provider.complete({ model: 'm', messages: hello, onDelta: () => {} }), 'bad_response', /malformed stream \(no data\)/);
      assert.equal(fake.requests.length, 4, 'not retried');
    }),
  );

  test('404 names the endpoint to check', limit, () =>
    withFake(async (fake, provider) => {
      fake.script({ status: 404 });
      const error = await providerFailure(
        provider.complete({ model: 'claude-fake-missing', messages: hello }),
        'bad_request',
        /not found \(HTTP 404\); check the model and the base URL http:\/\/127\.0\.0\.1:\d+: model: claude-fake-missing/,
      );
      assert.equal(error.status, 404);
    }),
  );
});

describe('anthropic provider: cancel', () => {
  cancelTests(withFake, providerFailure, 529);
});
