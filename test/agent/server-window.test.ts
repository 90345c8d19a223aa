// A local server's context window asked ahead of the first turn (providers/server-window.ts `warmUp`, run
// by the service's warm-up once listening): the first turn then finds it known, unless the server could
// not be reached then (not started yet): that turn asks again instead of going without the figure for
// ten minutes. Real fake servers on 127.0.0.1.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ServerWindows } from '../../src/agent/providers/server-window';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';

const servers: FakeOpenAI[] = [];
after(async () => {
  for (const server of servers) await server.close();
});

async function fake(options: Parameters<typeof startFakeOpenAI>[0] = {}): Promise<FakeOpenAI> {
  const server = await startFakeOpenAI(options);
  servers.push(server);
  return server;
}

const probes = (server: FakeOpenAI) => server.asides.map((r) => `${r.method} ${r.path}`);

test("a server that answered the warm-up's probes is not asked again by the first turn", async () => {
  const ollama = await fake({ ollamaNumCtx: 8_192 });
  const windows = new ServerWindows(ollama.url);
  await windows.warmUp('llama3.1');
  assert.deepEqual(probes(ollama), ['GET /api/v0/models/llama3.1', 'POST /api/show']);
  assert.equal(await windows.of('llama3.1'), 8_192);
  assert.equal(ollama.asides.length, 2, 'the turn used the figure asked ahead');
});

test('an answer without a figure (a server of neither kind) is kept too: the first turn does not ask again', async () => {
  const other = await fake();
  const windows = new ServerWindows(other.url);
  await windows.warmUp('fake-model');
  assert.equal(await windows.of('fake-model'), undefined);
  assert.equal(other.asides.length, 2);
});

test('a server not reachable at the warm-up (not started yet) is asked again by the first turn', async () => {
  const before = await fake();
  const port = Number(new URL(before.url).port);
  const url = before.url;
  await before.close();
  servers.splice(servers.indexOf(before), 1);
  const windows = new ServerWindows(url);
  await windows.warmUp('llama3.1');
  const ollama = await fake({ ollamaNumCtx: 4_096, port });
  assert.equal(await windows.of('llama3.1'), 4_096);
  assert.deepEqual(probes(ollama), ['GET /api/v0/models/llama3.1', 'POST /api/show']);
});
