// The warm-up opens an HTTP provider's connection ahead (http-provider.ts, preconnect): what it sends,
// and when it sends nothing. The request goes through the fetch the SDK client sends with (here a
// recording one), so its connection is the one the first turn finds in that fetch's pool
// (test/service/provider-preconnect.test.ts shows the reuse over a real socket).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAnthropicProvider } from '../../src/agent/providers/anthropic';
import { createOpenAIProvider } from '../../src/agent/providers/openai';

type Fetch = typeof fetch;

function recorder(): { fetch: typeof fetch; sent: { url: string; init: RequestInit | undefined }[] } {
  const sent: { url: string; init: RequestInit | undefined }[] = [];
  const recording = (async (input: string | URL | Request, init?: RequestInit) => {
    sent.push({ url: String(input), init });
    return new Response(null, { status: 404 });
  }) as typeof fetch;
  return { fetch: recording, sent };
}

test("a vendor's host with a key: one OPTIONS of its origin, without the key, the path, the query or a body, its redirect not followed", async () => {
  for (const make of [
    (send: Fetch) => createOpenAIProvider({ apiKey: 'sk-secret-key', baseUrl: 'https://api.openai.com/v1?key=in-query', fetch: send }),
    (send: Fetch) => createAnthropicProvider({ apiKey: 'sk-secret-key', baseUrl: 'https://api.anthropic.com/v1?key=in-query', fetch: send }),
  ]) {
    const { fetch, sent } = recorder();
    await make(fetch).warmUp!('model');
    assert.equal(sent.length, 1);
    const [{ url, init }] = sent;
    assert.match(url, /^https:\/\/api\.(openai|anthropic)\.com\/$/);
    assert.equal(init?.method, 'OPTIONS');
    assert.equal(init?.redirect, 'manual');
    assert.equal(init?.body, undefined);
    assert.equal(init?.headers, undefined);
    assert.ok(init?.signal instanceof AbortSignal, 'bounded in time');
    assert.doesNotMatch(JSON.stringify({ url, init }), /secret|in-query/);
  }
});

test('nothing is sent where no turn could send: a vendor without a key, credentials in the base URL, an invalid base URL', async () => {
  for (const make of [
    (send: Fetch) => createOpenAIProvider({ fetch: send }),
    (send: Fetch) => createAnthropicProvider({ fetch: send }),
    (send: Fetch) => createAnthropicProvider({ apiKey: 'k', baseUrl: 'https://user:pass@example.test', fetch: send }),
    (send: Fetch) => createAnthropicProvider({ apiKey: 'k', baseUrl: 'not a url', fetch: send }),
  ]) {
    const { fetch, sent } = recorder();
    await make(fetch).warmUp!('model');
    assert.deepEqual(sent, []);
  }
});

test("a failure is the first turn's to report: the warm-up's ask settles quietly", async () => {
  const refusing = (async () => {
    throw new TypeError('fetch failed');
  }) as typeof fetch;
  await createAnthropicProvider({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9', fetch: refusing }).warmUp!('model');
});

test("an answer to the OPTIONS that never ends is read no further than 64 KiB, and the warm-up's end gives the ask up", async (t) => {
  const { createServer } = await import('node:http');
  let sent = 0;
  let connections = 0;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) sent += chunk.length;
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as { port: number };
  const provider = createAnthropicProvider({ apiKey: 'k', baseUrl: `http://127.0.0.1:${port}` });
  await provider.warmUp!('model');
  // What the server pushed before the connection was let go: the 64 KiB read and the sockets' buffers,
  // not the hundreds of megabytes loopback carries in the 2 s the ask is bounded by.
  assert.ok(sent < 32 * 1024 * 1024, `${sent} bytes sent`);
  assert.equal(connections, 1);

  // The warm-up already over (a first turn, stop): nothing is asked.
  await provider.warmUp!('model', AbortSignal.abort());
  assert.equal(connections, 1);
});
