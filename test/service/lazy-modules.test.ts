// The heaviest modules load when first needed, not at start (docs/design.md, "Start-up"): opening and
// starting the service requires none of the provider SDKs, the MCP SDK or web-push; once listening, the
// configured provider's SDK is warmed up (the first chat does not pay for it) and the rest stay unloaded
// while nothing needs them (no MCP server configured, no push device). Each test file is its own
// process, so require.cache shows what this service loaded.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService, type RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

const HEAVY = {
  openai: /node_modules[\\/]openai[\\/]/,
  anthropic: /node_modules[\\/]@anthropic-ai[\\/]sdk[\\/]/,
  mcp: /node_modules[\\/]@modelcontextprotocol[\\/]sdk[\\/]/,
  'web-push': /node_modules[\\/]web-push[\\/]/,
};
type Heavy = keyof typeof HEAVY;

const loaded = (): Heavy[] => (Object.keys(HEAVY) as Heavy[]).filter((name) => Object.keys(require.cache).some((file) => HEAVY[name].test(file)));

let fake: FakeOpenAI;
let svc: RunningService;
let loadedAtStart: Heavy[];

before(async () => {
  fake = await startFakeOpenAI();
  svc = await startService({ provider: 'openai', model: 'fake-model', base_url: fake.url });
  // Right after start resolves: the warm-up waits for a timer, which cannot have run yet.
  loadedAtStart = loaded();
});

after(async () => {
  await svc?.dispose();
  await fake?.close();
});

test('a start loads none of the provider SDKs, the MCP SDK or web-push', () => {
  assert.deepEqual(loadedAtStart, []);
});

test("once listening, the configured provider's SDK is loaded before any chat; a chat loads nothing else", async () => {
  while (!loaded().includes('openai')) await new Promise((resolve) => setTimeout(resolve, 10));
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const reply = await client.request({ type: 'chat', message: 'hello' });
    assert.equal(reply.status, 'ok');
    assert.equal(fake.requests.length, 1);
  } finally {
    client.close();
  }
  assert.deepEqual(loaded(), ['openai']);
});
