import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { hashPassword } from '../../src/transport/auth/passwords';
import { Service, type ServiceOptions } from '../../src/service';
import { DataDirInUseError } from '../../src/store';
import { useFakeProvider } from '../helpers/service-fixture';
import { postJson, TEST_TOKEN, writeConfig } from '../helpers/service';
import { settledSoon, tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

// The service listens once its data directory is locked and opens its store behind (Service.begin):
// what clients send meanwhile waits for the open and is answered rightly, or told clearly why not.

const PASSWORD = 'correct horse battery staple';
const rig = useFakeProvider();

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether something accepts a connection on the port. */
const listens = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** A hold on the service's open (ServiceOptions.holdOpen), let go by the test. */
function hold(): { promise: Promise<void>; release: () => void } {
  let release = () => {};
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

/** A service begun (locked, listening) on a new data directory whose open is held; stopped and removed after the test. */
async function begun(t: TestContext, config: Record<string, unknown> = {}, options: Partial<ServiceOptions> = {}, prepare?: (dir: string) => Promise<void>) {
  const temp = await tempDir('ra-listen-first-');
  t.after(() => temp.cleanup());
  await writeConfig(temp.dir, rig.config(config));
  await prepare?.(temp.dir);
  const held = hold();
  const service = await Service.begin({ dataDir: temp.dir, host: '127.0.0.1', port: 0, holdOpen: held.promise, ...options });
  t.after(async () => {
    held.release();
    await service.stop();
  });
  const { port } = await service.start();
  return { service, dir: temp.dir, held, httpUrl: `http://127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}/ws` };
}

describe('while the store opens', () => {
  test('/health says starting (503), the phone page is served, and what needs the store waits, then is answered rightly', async (t) => {
    const users = [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }];
    const { service, held, httpUrl, wsUrl } = await begun(t, { users, model: 'fake-model' });

    const starting = await fetch(`${httpUrl}/health`);
    assert.equal(starting.status, 503);
    const startingBody = await starting.json();
    assert.equal(startingBody.status, 'starting');
    assert.ok(Number.isInteger(startingBody.uptime_seconds));
    assert.equal((await fetch(`${httpUrl}/`)).status, 200, 'the phone page needs no store');

    // A socket logs in and sends get_config and a chat at once, without waiting for the answers.
    const client = await TestClient.connect(wsUrl);
    const auth = client.request({ type: 'auth', token: TEST_TOKEN, id: 'a' });
    const config = client.request({ type: 'get_config', id: 'c' });
    const chat = client.request({ type: 'chat', message: 'sent while opening', id: 'm' });
    // A password login, and the editor's own session (in process), at the same time.
    const login = postJson(`${httpUrl}/auth`, { username: 'ada', password: PASSWORD });
    const editor = service.openSession({ source: { kind: 'editor' }, principal: 'access', canAnswerPermissions: true, send: () => {} });
    const editorConfig = editor.request({ type: 'get_config', id: 'e' });

    // Nothing is answered while the open is held (a /health round trip later, still nothing).
    assert.equal((await fetch(`${httpUrl}/health`)).status, 503);
    for (const pending of [auth, config, chat, login, editorConfig]) assert.equal(await settledSoon(pending), false);
    assert.equal(rig.fake.requests.length, 0, 'no turn ran before the store was open');

    held.release();
    await service.ready;
    const authReply = await auth;
    assert.equal(authReply.id, 'a');
    assert.equal((authReply.data as { authenticated: boolean }).authenticated, true, JSON.stringify(authReply));
    const configReply = await config;
    assert.equal(configReply.status, 'ok', JSON.stringify(configReply));
    assert.equal((configReply.data as { model: string }).model, 'fake-model');
    const chatReply = await chat;
    assert.equal(chatReply.status, 'ok', JSON.stringify(chatReply));
    assert.equal((chatReply.data as { response: string }).response, 'echo: sent while opening');
    const loginReply = await login;
    assert.equal(loginReply.status, 200, loginReply.text);
    const sessionToken = (loginReply.body!.data as { token: string }).token;
    assert.equal((await editorConfig).status, 'ok');
    // The session token handed out works, and the chat is in the history.
    const user = await TestClient.authed(wsUrl, sessionToken);
    const listed = await user.request({ type: 'list_conversations' });
    assert.equal((listed.data as { conversations: unknown[] }).conversations.length, 1);
    assert.equal((await fetch(`${httpUrl}/health`)).status, 200);
    client.close();
    user.close();
    editor.close();
  });

  test('a path no route of the store can have (a GET of an unknown page, a POST to no webhook path) is a 404 at once, not a connection held for the open (the POST failed before: it waited)', async (t) => {
    const webhook = { accounts: { ci: { incoming_path: '/hooks/ci', outgoing_url: 'http://127.0.0.1:9/ci', secret: 'listen-first-webhook-secret-0123456789' } } };
    const { service, httpUrl } = await begun(t, { channels: { webhook } });
    // Answered while the open is still held: it never waited for it.
    const unknown = await fetch(`${httpUrl}/wp-login.php`);
    assert.equal(unknown.status, 404);
    const unknownPost = await fetch(`${httpUrl}/hooks/unknown`, { method: 'POST', body: '{}' });
    assert.equal(unknownPost.status, 404);
    assert.equal(service.ready !== undefined && (await settledSoon(service.ready)), false, 'the open is still held');
    // A webhook account's path (service.json names it) and POST /auth are the store's: they wait.
    for (const path of ['/hooks/ci', '/auth']) assert.equal(await settledSoon(fetch(`${httpUrl}${path}`, { method: 'POST', body: '{}' })), false, path);
  });

  test('a client that waits longer than the bound is told to try again (server_error, socket closed 1013; HTTP with Retry-After), and the service goes on', async (t) => {
    const { service, held, httpUrl, wsUrl } = await begun(t, {}, { openingWaitMs: 50 });
    const client = await TestClient.connect(wsUrl);
    // Its frames were never read: the answer names no id, and the close code says the same.
    client.send({ type: 'auth', token: TEST_TOKEN, id: 'a' });
    const reply = await client.next((frame) => 'status' in frame);
    assert.equal(reply.status, 'error');
    assert.equal(reply.code, 'server_error');
    assert.match(String(reply.error), /still opening/);
    assert.equal((await client.waitClose()).code, 1013);
    const login = await postJson(`${httpUrl}/auth`, { username: 'ada', password: PASSWORD });
    assert.equal(login.status, 500);
    assert.equal(login.body!.code, 'server_error');
    assert.equal(login.headers.get('retry-after'), '1');

    held.release();
    await service.ready;
    const again = await TestClient.authed(wsUrl, TEST_TOKEN);
    assert.equal((await again.request({ type: 'get_config' })).status, 'ok');
    again.close();
  });

  test('a second service on the same data directory is refused while the first opens (the lock is taken before listening)', async (t) => {
    const { dir } = await begun(t);
    await assert.rejects(Service.begin({ dataDir: dir, host: '127.0.0.1', port: 0 }), DataDirInUseError);
  });
});

describe('stopped while the store opens', () => {
  test('warmedUp settles false: the warm-up never began (before, it never settled, and a waiter such as the build\u2019s rehearsal waited for good)', async (t) => {
    const { service, held } = await begun(t);
    const stopped = service.stop();
    held.release();
    await stopped;
    assert.equal(await settledSoon(service.warmedUp), true, 'warmedUp settled');
    assert.equal(await service.warmedUp, false);
  });
});

describe('stopped before it listens', () => {
  test('start() after stop() began refuses, and nothing listens: a host that stopped while the lock was taken never binds the port (review27a)', async (t) => {
    const temp = await tempDir('ra-listen-first-');
    t.after(() => temp.cleanup());
    await writeConfig(temp.dir, rig.config());
    const port = await freePort();
    const service = await Service.begin({ dataDir: temp.dir, host: '127.0.0.1', port });
    const stopped = service.stop();
    await assert.rejects(service.start(), /stopping/);
    await stopped;
    assert.equal(await listens(port), false, `port ${port} was bound by a stopped service`);
  });

  test('a stop that begins while start() binds closes what it bound: start() refuses', async (t) => {
    const temp = await tempDir('ra-listen-first-');
    t.after(() => temp.cleanup());
    await writeConfig(temp.dir, rig.config());
    const port = await freePort();
    const service = await Service.begin({ dataDir: temp.dir, host: '127.0.0.1', port });
    const starting = service.start();
    const stopped = service.stop();
    await assert.rejects(starting, /stopping/);
    await stopped;
    assert.equal(await listens(port), false, `port ${port} was left bound by a stopped service`);
  });
});

describe('when the open fails after listening', () => {
  test('a damaged service.db: every waiter gets a clear error, ready rejects with the open error, the port closes', async (t) => {
    const { service, held, httpUrl, wsUrl } = await begun(t, {}, {}, (dir) => writeFile(join(dir, 'service.db'), 'not a database at all'));
    const client = await TestClient.connect(wsUrl);
    client.send({ type: 'auth', token: TEST_TOKEN, id: 'a' });
    const auth = client.next((frame) => 'status' in frame);
    const login = postJson(`${httpUrl}/auth`, { username: 'ada', password: PASSWORD });
    const editor = service.openSession({ source: { kind: 'editor' }, principal: 'access', canAnswerPermissions: true, send: () => {} });
    const editorConfig = editor.request({ type: 'get_config', id: 'e' });
    assert.equal(await settledSoon(auth), false);

    held.release();
    // The error the host meets is the store's own, as Service.open threw it before listening came first.
    await assert.rejects(service.ready, /is not a readable database/);
    const authReply = await auth;
    assert.equal(authReply.code, 'server_error');
    assert.match(String(authReply.error), /could not open/);
    assert.ok(!String(authReply.error).includes('service.db'), 'no path is told to the client');
    assert.equal((await client.waitClose()).code, 1011);
    const loginReply = await login;
    assert.equal(loginReply.status, 500);
    assert.equal(loginReply.body!.code, 'server_error');
    const editorReply = await editorConfig;
    assert.deepEqual(editorReply, { status: 'error', error: editorReply.status === 'error' ? editorReply.error : '', code: 'server_error', id: 'e' });
    await assert.rejects(fetch(`${httpUrl}/health`), 'the server closed');
    // start() again (the editor's retry) meets the same error; stop() is harmless.
    await assert.rejects(service.start(), /is not a readable database/);
    await service.stop();
    assert.equal(await settledSoon(service.warmedUp), true, 'warmedUp settled: the warm-up never began');
    assert.equal(await service.warmedUp, false);
  });

  test('Service.open still throws the open error itself, with nothing left listening or locked', async (t) => {
    const temp = await tempDir('ra-listen-first-');
    t.after(() => temp.cleanup());
    await writeConfig(temp.dir, {});
    await writeFile(join(temp.dir, 'service.db'), 'not a database at all');
    await assert.rejects(Service.open({ dataDir: temp.dir, host: '127.0.0.1', port: 0 }), /is not a readable database/);
    // The lock was released: a repaired directory opens at once.
    await rm(join(temp.dir, 'service.db'));
    const service = await Service.open({ dataDir: temp.dir, host: '127.0.0.1', port: 0 });
    await service.stop();
  });
});
