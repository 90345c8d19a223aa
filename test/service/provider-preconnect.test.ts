// A provider's first request after start opens its connection to the provider's origin (TCP, and for a
// real https provider the TLS handshake): the chat sent one second after start paid it, the second did
// not (issue 25). The warm-up opens that connection ahead, in the pool Node's fetch (the SDKs' fetch)
// keeps, with an OPTIONS of the origin that carries no key and no content; a local OpenAI-compatible
// server's window probes open it already. An unreachable provider costs nothing seen: the warm-up stays
// whole and quiet, and the first chat fails as it always did.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { startService, type RunningService } from '../helpers/service';
import { withService } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';

const logOf = (svc: RunningService) => readFile(join(svc.dataDir, 'service.log'), 'utf8');

/** What the log says from listening on (a warning of the open, service.json's mode, is not the warm-up's). */
async function logSinceListening(svc: RunningService): Promise<string> {
  const log = await logOf(svc);
  return log.slice(log.indexOf('service.listening'));
}

test("the first chat after start goes over the connection the warm-up opened to the provider's origin, which carried no key and no content", async (t) => {
  const svc = await withService(t, { provider: 'anthropic', config: { model: 'claude-fake-2' } });
  assert.equal(await svc.service.warmedUp, true, 'the warm-up was whole');
  assert.equal(svc.fake.connections, 1, 'the warm-up opened one connection to the provider');
  assert.equal(svc.fake.requests.length, 0, 'and asked the API nothing');
  const [ahead] = svc.fake.asides;
  assert.equal(svc.fake.asides.length, 1);
  assert.equal(ahead.method, 'OPTIONS');
  assert.equal(ahead.path, '/');
  assert.equal(ahead.body, undefined);
  for (const header of ['x-api-key', 'authorization', 'anthropic-version', 'content-type']) assert.equal(ahead.headers[header], undefined, header);
  assert.doesNotMatch(JSON.stringify(ahead.headers), /sk-test/);

  const client = await svc.client();
  const reply = await client.request({ type: 'chat', message: 'hello', stream: true });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  assert.equal(svc.fake.requests.length, 1);
  assert.equal(svc.fake.requests[0].connection, ahead.connection, 'the chat was sent on the connection opened ahead');
  assert.equal(svc.fake.connections, 1, 'and no other was opened');
  assert.doesNotMatch(await logSinceListening(svc), /warm_up_failed|"level":"(warn|error)"/);
});

test('a provider whose port is closed: the warm-up is whole and quiet, and the first chat fails as it always did', async (t) => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const svc = await startService({ provider: 'anthropic', model: 'claude-fake-2', base_url: `http://127.0.0.1:${port}` });
  t.after(() => svc.dispose());
  assert.equal(await svc.service.warmedUp, true, 'the warm-up was whole');
  assert.doesNotMatch(await logSinceListening(svc), /warm_up_failed|"level":"(warn|error)"/);
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(() => client.close());
  const reply = await client.request({ type: 'chat', message: 'hello', stream: true });
  assert.equal(reply.status, 'error');
  assert.match(String(reply.error), new RegExp(`cannot reach http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));
});

test('a provider that takes the connection and never answers: the warm-up still ends, quietly, and stop is clean', async (t) => {
  const held: net.Socket[] = [];
  const silent = net.createServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of held) socket.destroy();
    silent.close();
  });
  const { port } = silent.address() as AddressInfo;
  const svc = await startService({ provider: 'anthropic', model: 'claude-fake-2', base_url: `http://127.0.0.1:${port}` });
  t.after(() => svc.dispose());
  assert.equal(await svc.service.warmedUp, true, 'the warm-up was whole: the request ahead gave up on its own');
  assert.equal(held.length, 1, 'one connection was opened ahead');
  assert.doesNotMatch(await logSinceListening(svc), /warm_up_failed|"level":"(warn|error)"/);
  await svc.stop();
  assert.match(await logOf(svc), /service\.stopped/);
});
