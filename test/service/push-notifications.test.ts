// Web Push notifications (docs/protocol.md, "Web Push"), against a fake push service that checks the
// VAPID JWT and decrypts each RFC 8291 body with the keys the test made as a browser does: what is sent
// for a prompt, its withdrawal, a turn's end, content-blind devices, visible pages, delivery outcomes.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import https from 'node:https';
import { after, beforeEach, test } from 'node:test';
import { hashPassword } from '../../src/transport/auth/passwords';
import { startFakePushService, type BrowserSubscription, type FakePushService, type ReceivedPush } from '../helpers/fake-push-service';
import { postJson, TEST_API_KEY, TEST_TOKEN } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';

const PASSWORD = 'correct horse battery staple';
const TIMEOUT_SECONDS = 600;
let push: FakePushService;
let vapidKey: string;
const svc = useService({
  workspace: true,
  config: async () => {
    push = await startFakePushService();
    return {
      model: 'fake-model',
      permission_mode: 'ask',
      users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }],
      channels: { webhook: { accounts: { alpha: { incoming_path: '/hooks/alpha', outgoing_url: 'http://127.0.0.1:9/none' } } } },
    };
  },
  options: () => ({ permissionTimeoutMs: TIMEOUT_SECONDS * 1000, push: { allowPrivateEndpoints: true, agent: new https.Agent({ ca: push.ca }), retryBaseMs: 5, tries: 3 } }),
  afterStart: async (started) => {
    const client = await TestClient.authed(started.wsUrl, started.token);
    vapidKey = ((await client.request({ type: 'push_info' })).data as { vapid_public_key: string }).vapid_public_key;
    client.close();
  },
});
after(() => push?.close());

/** Every test starts without devices and with an empty record of pushes. */
beforeEach(async () => {
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  const devices = ((await client.request({ type: 'list_push_devices' })).data as { devices: { device_id: string }[] }).devices;
  for (const device of devices) await client.request({ type: 'push_unsubscribe', device_id: device.device_id });
  client.close();
  push.received.length = 0;
});

interface Device {
  id: string;
  subscription: BrowserSubscription;
  /** The pushes this device's subscription received. */
  pushes(): ReceivedPush[];
}

async function subscribeDevice(client: TestClient, extra: Record<string, unknown> = {}): Promise<Device> {
  const subscription = push.subscription();
  const id = randomUUID();
  const reply = await client.request({ type: 'push_subscribe', device_id: id, device_name: 'Android Chrome', subscription, ...extra });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  const pathId = subscription.endpoint.split('/').pop();
  return { id, subscription, pushes: () => push.received.filter((p) => p.id === pathId) };
}

const topicOf = (tag: string) => createHash('sha256').update(tag).digest('base64url').slice(0, 22);

function assertValidVapid(received: ReceivedPush): void {
  assert.equal(received.headers['content-encoding'], 'aes128gcm');
  assert.equal(received.jwt.key, vapidKey, "k= is the service's VAPID public key");
  assert.equal(received.jwt.signatureValid, true, "ES256 signature by the service's VAPID key");
  assert.equal(received.jwt.header.alg, 'ES256');
  assert.equal(received.jwt.claims.aud, push.origin, "aud is the endpoint's origin");
  const now = Date.now() / 1000;
  assert.ok(received.jwt.claims.exp! > now && received.jwt.claims.exp! <= now + 24 * 3600, 'exp within 24 h');
  assert.match(String(received.jwt.claims.sub), /^(mailto:|https:)/);
}

async function promptFor(client: TestClient, command: string, id: string) {
  svc.fake.script({ tool_calls: [{ name: 'run_command', arguments: { command } }] }, { text: 'done' });
  client.send({ type: 'chat', message: `please run ${command}`, id });
  return client.next((f) => f.event === 'permission.request' && f.tool === 'run_command');
}

test('a waiting prompt is pushed (title, body, tag, url, TTL, urgency, topic, VAPID); its answer withdraws it with the same tag', async () => {
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const device = await subscribeDevice(owner);
    const request = await promptFor(owner, 'git status --short', 'p1');
    await push.waitFor(() => device.pushes().length === 1, 'the prompt push');
    const [prompt] = device.pushes();
    assertValidVapid(prompt);
    const cid = String(request.conversation_id);
    assert.deepEqual(prompt.payload, {
      v: 1,
      kind: 'prompt',
      tag: `prompt:${cid}`,
      conversation_id: cid,
      request_id: request.request_id,
      title: 'Run git status --short?',
      body: 'please run git status --short',
      url: `./?conversation=${cid}&request=${request.request_id}`,
    });
    assert.equal(prompt.urgency, 'high');
    assert.ok(prompt.ttl > TIMEOUT_SECONDS - 10 && prompt.ttl <= TIMEOUT_SECONDS, `TTL is the time left to answer (${prompt.ttl})`);
    assert.equal(prompt.topic, topicOf(`prompt:${cid}`));

    await owner.request({ type: 'permission_response', request_id: request.request_id, decision: 'deny' });
    await push.waitFor(() => device.pushes().length === 2, 'the resolved push');
    const resolved = device.pushes()[1];
    assertValidVapid(resolved);
    assert.equal(resolved.payload!.kind, 'resolved');
    assert.equal(resolved.payload!.tag, `prompt:${cid}`, 'the same tag: the worker withdraws the prompt');
    assert.equal(resolved.payload!.request_id, request.request_id);
    assert.equal(resolved.topic, prompt.topic, 'the same topic: a push service still holding the prompt replaces it');
    await owner.next((f) => f.id === 'p1' && 'status' in f);
  } finally {
    owner.close();
  }
});

test('a turn that ends is pushed as finished / failed / webhook, each on or off per device; a cancelled one is not', async () => {
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const all = await subscribeDevice(owner);
    const quiet = await subscribeDevice(owner, { events: { prompt: true, finished: false, failed: false, webhook: false } });
    const reply = await owner.request({ type: 'chat', message: 'hello there' });
    const cid = (reply.data as { conversation_id: string }).conversation_id;
    await push.waitFor(() => all.pushes().length === 1, 'the finished push');
    assertValidVapid(all.pushes()[0]);
    assert.deepEqual(all.pushes()[0].payload, { v: 1, kind: 'finished', tag: `run:${cid}`, conversation_id: cid, title: 'hello there', body: 'echo: hello there', url: `./?conversation=${cid}` });
    assert.equal(all.pushes()[0].topic, topicOf(`run:${cid}`));

    svc.fake.script({ status: 401 });
    await owner.request({ type: 'chat', message: 'this fails', conversation_id: cid });
    await push.waitFor(() => all.pushes().length === 2, 'the failed push');
    const failed = all.pushes()[1].payload!;
    assert.equal(failed.kind, 'failed');
    assert.equal(failed.tag, `run:${cid}`);
    assert.match(String(failed.body), /credentials \(HTTP 401\)/);
    assert.ok(!JSON.stringify(failed).includes(TEST_API_KEY.slice(-6)));

    const accepted = await postJson(`${svc.httpUrl}/hooks/alpha`, { message: 'build #12 broke' });
    const hookCid = (accepted.body!.data as { conversation_id: string }).conversation_id;
    await push.waitFor(() => all.pushes().length === 3, 'the webhook push');
    const hook = all.pushes()[2].payload!;
    assert.equal(hook.kind, 'webhook');
    assert.equal(hook.tag, `run:${hookCid}`);
    assert.match(String(hook.title), /alpha/);

    svc.fake.script({ text: 'a b c d e f g h i j', chunks: 10, chunkDelayMs: 300 });
    owner.send({ type: 'chat', message: 'long', conversation_id: cid, id: 'long', stream: true });
    await owner.next((f) => f.event === 'chat.delta' && f.id === 'long');
    owner.send({ type: 'cancel', id: 'long' });
    await owner.next((f) => f.event === 'turn.ended' && f.outcome === 'cancelled');
    // A later push proves the cancelled turn sent nothing before it.
    await owner.request({ type: 'push_test', device_id: all.id });
    assert.deepEqual(
      all.pushes().map((p) => p.payload!.kind),
      ['finished', 'failed', 'webhook', 'test'],
    );
    assert.equal(quiet.pushes().length, 0, 'the device with those kinds off got none');
  } finally {
    owner.close();
  }
});

test('a content-blind device gets no tool, command or title text', async () => {
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const blind = await subscribeDevice(owner, { content_blind: true });
    const request = await promptFor(owner, 'cat secret-plans.txt', 'b1');
    await push.waitFor(() => blind.pushes().length === 1, 'the blind prompt');
    const cid = String(request.conversation_id);
    assert.deepEqual(blind.pushes()[0].payload, { v: 1, kind: 'prompt', tag: `prompt:${cid}`, blind: true, conversation_id: cid, request_id: request.request_id });
    await owner.request({ type: 'permission_response', request_id: request.request_id, decision: 'deny' });
    await owner.next((f) => f.id === 'b1' && 'status' in f);
    await push.waitFor(() => blind.pushes().length === 3, 'resolved and finished');
    assert.deepEqual(blind.pushes()[2].payload, { v: 1, kind: 'finished', tag: `run:${cid}`, blind: true, conversation_id: cid });
    assert.ok(!blind.pushes().some((p) => JSON.stringify(p.payload).includes('secret-plans')));
  } finally {
    owner.close();
  }
});

test('no push to a device whose page reports visible; it counts as hidden again when its socket closes', async () => {
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const device = await subscribeDevice(phone);
    const state = await phone.request({ type: 'client_state', device_id: device.id, visible: true });
    assert.equal(state.status, 'ok', JSON.stringify(state));
    await owner.request({ type: 'chat', message: 'while the page is visible' });
    // A test push (not suppressed: asked for) marks the point after which the finished push would have come.
    await owner.request({ type: 'push_test', device_id: device.id });
    assert.deepEqual(
      device.pushes().map((p) => p.payload!.kind),
      ['test'],
    );

    await phone.request({ type: 'client_state', device_id: device.id, visible: false });
    await owner.request({ type: 'chat', message: 'page hidden' });
    await push.waitFor(() => device.pushes().length === 2, 'a push once hidden');

    await phone.request({ type: 'client_state', device_id: device.id, visible: true });
    phone.close();
    await phone.waitClose();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await owner.request({ type: 'chat', message: 'page gone' });
    await push.waitFor(() => device.pushes().length === 3, 'a push once the socket closed');
    assert.deepEqual(
      device.pushes().map((p) => p.payload!.kind),
      ['test', 'finished', 'finished'],
    );
  } finally {
    owner.close();
    phone.close();
  }
});

test("a session user's device is not pushed the prompts only the owner may answer", async () => {
  const login = await postJson(`${svc.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
  const user = await TestClient.authed(svc.wsUrl, (login.body!.data as { token: string }).token);
  const owner = await TestClient.authed(svc.wsUrl, TEST_TOKEN);
  try {
    const userDevice = await subscribeDevice(user);
    const ownerDevice = await subscribeDevice(owner);
    svc.fake.script({ tool_calls: [{ name: 'run_command', arguments: { command: 'cat service.json' } }] }, { text: 'done' });
    user.send({ type: 'chat', message: 'read the token', id: 'u1' });
    const request = await owner.next((f) => f.event === 'permission.request');
    await push.waitFor(() => ownerDevice.pushes().length === 1, "the owner device's prompt");
    assert.equal(userDevice.pushes().length, 0, "the session user's device got no prompt");
    await owner.request({ type: 'permission_response', request_id: request.request_id, decision: 'deny' });
    await user.next((f) => f.id === 'u1' && 'status' in f);
  } finally {
    user.close();
    owner.close();
  }
});

test('delivery outcomes: 5xx retried then ok; 410 removes the device; failures counted on the device', async () => {
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const device = await subscribeDevice(owner);
    push.script(503, 500);
    const test1 = await owner.request({ type: 'push_test', device_id: device.id });
    assert.deepEqual(test1.data, { results: [{ device_id: device.id, ok: true, status: 201 }] });
    assert.deepEqual(
      device.pushes().map((p) => p.answered),
      [503, 500, 201],
      'retried after two 5xx',
    );
    let listed = ((await owner.request({ type: 'list_push_devices' })).data as { devices: Record<string, unknown>[] }).devices;
    assert.equal(listed[0].failures, 0);
    assert.equal((listed[0].last_delivery as { ok: boolean; status: number }).status, 201);

    push.script(503, 503, 503);
    const test2 = await owner.request({ type: 'push_test', device_id: device.id });
    const [result] = (test2.data as { results: { ok: boolean; status: number; error: string }[] }).results;
    assert.equal(result.ok, false);
    assert.equal(result.status, 503);
    assert.match(result.error, /503/);
    assert.ok(!result.error.includes(device.subscription.endpoint), 'the endpoint (a capability) is not shown');
    listed = ((await owner.request({ type: 'list_push_devices' })).data as { devices: Record<string, unknown>[] }).devices;
    assert.equal(listed[0].failures, 1);
    assert.equal((listed[0].last_delivery as { ok: boolean }).ok, false);
    push.received.length = 0;

    push.script(410);
    const test3 = await owner.request({ type: 'push_test', device_id: device.id });
    assert.equal((test3.data as { results: { status: number }[] }).results[0].status, 410);
    assert.equal(push.received.length, 1, 'a gone subscription is not retried');
    listed = ((await owner.request({ type: 'list_push_devices' })).data as { devices: Record<string, unknown>[] }).devices;
    assert.equal(listed.length, 0, 'the device is gone');
  } finally {
    owner.close();
  }
});

test('attack: a push endpoint answering with an endless body is not read whole (memory), and the push still ends', async () => {
  // Any user client may subscribe an endpoint of its choosing: a hostile one answers 201 and then streams
  // without end. web-push buffered the whole body before settling: the service's memory filled, the
  // device's queue never moved. The status decides; at most a little of the body is read, then the
  // connection is let go.
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const device = await subscribeDevice(owner);
    push.answerEndlessly();
    const reply = await owner.request({ type: 'push_test', device_id: device.id });
    assert.deepEqual(reply.data, { results: [{ device_id: device.id, ok: true, status: 201 }] });
    await push.waitFor((p) => p.endless.closed, 'the service letting the endless answer go');
    assert.ok(push.endless.sent < 32 * 1024 * 1024, `the service stopped reading (${push.endless.sent} bytes written)`);
    push.received.length = 0;
    const next = await owner.request({ type: 'push_test', device_id: device.id });
    assert.deepEqual(next.data, { results: [{ device_id: device.id, ok: true, status: 201 }] }, 'the device still gets pushes');
  } finally {
    owner.close();
  }
});

test('push_test to every device, and a test payload', async () => {
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const one = await subscribeDevice(owner);
    const two = await subscribeDevice(owner, { content_blind: true });
    const reply = await owner.request({ type: 'push_test' });
    const results = (reply.data as { results: { device_id: string; ok: boolean }[] }).results;
    assert.deepEqual(results.map((r) => r.device_id).sort(), [one.id, two.id].sort());
    assert.ok(results.every((r) => r.ok));
    assert.equal(one.pushes()[0].payload!.kind, 'test');
    assert.equal(one.pushes()[0].payload!.tag, 'test');
    assert.equal(typeof one.pushes()[0].payload!.title, 'string');
    assert.deepEqual(two.pushes()[0].payload, { v: 1, kind: 'test', tag: 'test', blind: true });
  } finally {
    owner.close();
  }
});
