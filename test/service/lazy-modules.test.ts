// The heaviest modules load when first needed, not at start (docs/design.md, "Start-up"): opening and
// starting the service requires none of the provider SDKs, the MCP SDK or web-push; once listening, the
// configured provider's SDK is warmed up (the first chat does not pay for it) and the rest stay unloaded
// while nothing needs them (no MCP server configured, no push device); what a turn's context reads
// (git's status of the workspace) and the model's window (the fake is a local server) are asked ahead too,
// by a provider built ahead. Each test file is its own process, so
// require.cache shows what this service loaded.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { gitStarter } from '../../src/git/git-starter';
import { Service } from '../../src/service';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService, writeConfig, type RunningService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const HEAVY = {
  openai: /node_modules[\\/]openai[\\/]/,
  anthropic: /node_modules[\\/]@anthropic-ai[\\/]sdk[\\/]/,
  mcp: /node_modules[\\/]@modelcontextprotocol[\\/]sdk[\\/]/,
  'web-push': /node_modules[\\/]web-push[\\/]/,
  // The relay tunnel's curves (src/tunnel/noble.ts): a pairing, the relay link, the machine's key pair.
  noble: /node_modules[\\/]@noble[\\/]/,
};
type Heavy = keyof typeof HEAVY;

const loaded = (): Heavy[] => (Object.keys(HEAVY) as Heavy[]).filter((name) => Object.keys(require.cache).some((file) => HEAVY[name].test(file)));

let fake: FakeOpenAI;
let svc: RunningService;
let loadedAtStart: Heavy[];
/** `git status` runs of this process (src/git/run-git.ts starts every git through gitStarter). */
let gitStatuses = 0;
const start = gitStarter.start;

before(async () => {
  gitStarter.start = (request, handlers) => {
    if (request.args.includes('status')) gitStatuses += 1;
    return start(request, handlers);
  };
  fake = await startFakeOpenAI();
  svc = await startService({ provider: 'openai', model: 'fake-model', base_url: fake.url });
  // Right after start resolves: the warm-up waits for a timer, which cannot have run yet.
  loadedAtStart = loaded();
});

after(async () => {
  gitStarter.start = start;
  await svc?.dispose();
  await fake?.close();
});

test("a start loads none of the provider SDKs, the MCP SDK, web-push or the tunnel's @noble", () => {
  assert.deepEqual(loadedAtStart, []);
});

test("once listening, the configured provider's SDK is loaded, git's status of the workspace read and the local server's window asked before any chat; a chat loads nothing else nor waits for them", async () => {
  await waitFor(() => loaded().includes('openai') && gitStatuses > 0 && fake.asides.length === 2, "the warm-up's SDK, git status and window", 10_000);
  const statuses = gitStatuses;
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const reply = await client.request({ type: 'chat', message: 'hello' });
    assert.equal(reply.status, 'ok');
    assert.equal(fake.requests.length, 1);
  } finally {
    client.close();
  }
  assert.deepEqual(loaded(), ['openai']);
  assert.equal(gitStatuses, statuses, 'the chat used the status read ahead');
  assert.equal(fake.asides.length, 2, 'the chat used the window asked ahead (providers/server-window.ts), of the provider built ahead');
});

test("while the store opens, the turn's context is read ahead (git's status) and nothing that costs the main thread more: the provider's steps wait for the open", async () => {
  const temp = await tempDir('ra-lazy-open-');
  await writeConfig(temp.dir, { provider: 'openai', model: 'fake-model', base_url: fake.url });
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const service = await Service.begin({ dataDir: temp.dir, host: '127.0.0.1', port: 0, holdOpen: held });
  try {
    const statuses = gitStatuses;
    const asides = fake.asides.length;
    await service.start();
    await waitFor(() => gitStatuses > statuses, "git's status asked while the store opens", 10_000);
    assert.equal(fake.asides.length, asides, "the provider's window is not asked before the open");
    release();
    await service.ready;
    await waitFor(() => fake.asides.length > asides, "the provider's window asked once the store is open", 10_000);
  } finally {
    release();
    await service.stop();
    await temp.cleanup();
  }
});
