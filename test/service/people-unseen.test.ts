// Another person's thing is, to a password user, a thing that does not exist (s36): asked for by id, its
// answer (status, code, message apart from the id sent, fields) is the one an unknown id gets, so no
// command tells one person whether another's id is real. Two password users and a webhook account on a
// real service over real sockets; each case compares the answer for the other's real id with the answer
// for a random unknown one. The owner still sees (and may change) everything.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import https from 'node:https';
import { after, describe, test } from 'node:test';
import { startFakePushService, type FakePushService } from '../helpers/fake-push-service';
import { pngLike, sha256, uploadAttachment } from '../helpers/attachments';
import { passwordUsers, postJson, sessionClient } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import type { TestClient } from '../helpers/ws-client';

const PASSWORD = 'correct horse battery staple';
/** The devices a person may subscribe (the service's 20, made small here). */
const MAX_DEVICES = 3;
let owner: TestClient;
let ada: TestClient;
let bob: TestClient;
let push: FakePushService;

const svc = useService({
  workspace: true,
  config: async () => {
    push = await startFakePushService();
    const channels = { webhook: { accounts: { alpha: { incoming_path: '/hooks/alpha', outgoing_url: 'http://127.0.0.1:9/none' } } } };
    return { model: 'fake-model', permission_mode: 'ask', channels, users: await passwordUsers(PASSWORD, 'ada', 'bob') };
  },
  options: () => ({ push: { maxDevices: MAX_DEVICES, allowPrivateEndpoints: true, agent: new https.Agent({ ca: push.ca }), retryBaseMs: 5, tries: 3 } }),
  afterStart: async (started) => {
    owner = await started.client();
    [ada, bob] = await Promise.all(['ada', 'bob'].map((name) => sessionClient(started, name, PASSWORD)));
  },
});

after(() => {
  for (const closing of [ada, bob, push]) closing?.close();
});

type Frame = Record<string, unknown>;

/** An answer as another person may compare it: the id it sent put back as `<id>`, the request's own id left out. */
function seen(reply: Frame, sentId: string): string {
  const { id: _requestId, ...rest } = reply;
  return JSON.stringify(rest).split(sentId).join('<id>');
}

/** Asks `frame(realId)` and `frame(unknownId)` as `asker`; the two answers must be the same but for the id. */
async function sameAsUnknown(asker: { request(frame: Frame): Promise<Frame> }, realId: string, frame: (id: string) => Frame): Promise<Frame> {
  const unknownId = randomUUID();
  const real = await asker.request(frame(realId));
  const unknown = await asker.request(frame(unknownId));
  assert.equal(seen(real, realId), seen(unknown, unknownId), `${String(frame(realId).type)}: another's id is told from an unknown one`);
  return real;
}

const subscribe = (client: TestClient, deviceId: string) => client.request({ type: 'push_subscribe', device_id: deviceId, device_name: 'phone', subscription: push.subscription() });
const deviceOf = (deviceId: string) => svc.service.store.pushDevices.get(deviceId);

describe('a push device is, to another password user, no device at all', () => {
  test('attack: push_settings, push_test and push_unsubscribe of ada’s device answer bob as an unknown id does', async () => {
    const device = randomUUID();
    assert.equal((await subscribe(ada, device)).status, 'ok');
    const settings = await sameAsUnknown(bob, device, (id) => ({ type: 'push_settings', device_id: id, device_name: 'bob’s now', events: { prompt: false } }));
    assert.equal(settings.code, 'not_found');
    const tested = await sameAsUnknown(bob, device, (id) => ({ type: 'push_test', device_id: id }));
    assert.equal(tested.code, 'not_found');
    const removed = await sameAsUnknown(bob, device, (id) => ({ type: 'push_unsubscribe', device_id: id }));
    assert.deepEqual(removed.data, { removed: false });
    // Nothing of ada's changed, and nothing was pushed to her phone.
    const row = deviceOf(device)!;
    assert.equal(row.device_name, 'phone');
    assert.equal(row.events.prompt, true);
    assert.equal(row.last_delivery, null, 'bob’s push_test rang ada’s phone');
    // The owner still may (every device is on the owner's machine).
    assert.equal((await owner.request({ type: 'push_settings', device_id: device, events: { finished: false } })).status, 'ok');
    assert.deepEqual((await owner.request({ type: 'push_unsubscribe', device_id: device })).data, { removed: true });
  });

  test('attack: client_state naming ada’s device answers bob as an unknown id does, and does not silence her phone', async () => {
    const device = randomUUID();
    assert.equal((await subscribe(ada, device)).status, 'ok');
    const reply = await sameAsUnknown(bob, device, (id) => ({ type: 'client_state', device_id: id, visible: true }));
    assert.equal(reply.status, 'ok');
    // The id bob named is what a later client_state without one reports, as for any id he names.
    assert.deepEqual((await bob.request({ type: 'client_state', device_id: device, visible: true })).data, { device_id: device, visible: true });
    assert.deepEqual((await bob.request({ type: 'client_state', visible: true })).data, { device_id: device, visible: true });
    // Bob's "visible" does not keep ada's notifications from her phone: a turn's end is still pushed to it.
    svc.fake.script({ text: 'done' });
    assert.equal((await ada.request({ type: 'chat', message: 'ring me' })).status, 'ok');
    await waitForDelivery(device);
    // The owner, who sees every device, is told plainly that it is someone else's (as before).
    assert.equal((await owner.request({ type: 'client_state', device_id: device, visible: true })).code, 'unauthorized');
    assert.deepEqual((await owner.request({ type: 'push_unsubscribe', device_id: device })).data, { removed: true });
  });
});

async function waitForDelivery(deviceId: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (deviceOf(deviceId)?.last_delivery == null) {
    if (Date.now() > deadline) throw new Error(`no push was tried for ${deviceId}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the devices a person may subscribe are counted per person', () => {
  test('attack: bob’s subscribe answers the same whether or not ada has devices, and cannot use up hers', async () => {
    const adas = randomUUID();
    assert.equal((await subscribe(ada, adas)).status, 'ok');
    const bobs = Array.from({ length: MAX_DEVICES }, () => randomUUID());
    for (const id of bobs) {
      const reply = await subscribe(bob, id);
      assert.equal(reply.status, 'ok', `bob’s device ${bobs.indexOf(id) + 1} of ${MAX_DEVICES}: ${JSON.stringify(reply)}`);
    }
    const over = await subscribe(bob, randomUUID());
    assert.equal(over.code, 'invalid_request');
    assert.match(String(over.error), new RegExp(`at most ${MAX_DEVICES} devices`));
    // Bob's full set keeps neither ada nor the owner from subscribing more of their own.
    assert.equal((await subscribe(ada, randomUUID())).status, 'ok', 'ada is kept out by bob’s devices');
    assert.equal((await subscribe(owner, randomUUID())).status, 'ok', 'the owner is kept out by bob’s devices');
    const all = ((await owner.request({ type: 'list_push_devices' })).data as { devices: { device_id: string }[] }).devices;
    for (const device of all) await owner.request({ type: 'push_unsubscribe', device_id: device.device_id });
  });
});

describe('a prompt only the owner may answer is, to a password user, no prompt at all', () => {
  test('attack: permission_response to the owner-only prompt of ada’s turn answers bob (and ada) as an unknown id does, waiting and after', async () => {
    svc.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'listed' });
    const ownerAsked = owner.next((f) => f.event === 'permission.request');
    const chat = ada.request({ type: 'chat', message: 'list the workspace' });
    const requestId = ((await ownerAsked) as { request_id: string }).request_id;
    for (const asker of [bob, ada]) {
      const waiting = await sameAsUnknown(asker, requestId, (id) => ({ type: 'permission_response', request_id: id, decision: 'allow' }));
      assert.equal(waiting.code, 'not_found');
    }
    assert.equal((await owner.request({ type: 'permission_response', request_id: requestId, decision: 'deny' })).status, 'ok', 'the owner answers it as before');
    assert.equal((await chat).status, 'ok');
    const answered = await sameAsUnknown(bob, requestId, (id) => ({ type: 'permission_response', request_id: id, decision: 'deny' }));
    assert.equal(answered.code, 'not_found');
    const again = await owner.request({ type: 'permission_response', request_id: requestId, decision: 'deny' });
    assert.equal((again.data as { already_decided?: boolean } | undefined)?.already_decided, true, 'the owner is still told it was decided');
  });
});

// Found sound (s36): kept as tests of the same comparison, each seen failing with its guard taken out.
describe('an upload is, to another password user, no upload at all', () => {
  test('ada’s upload in progress and her finished unsent one answer bob as unknown ids do', async () => {
    const bytes = pngLike(900);
    const begun = await ada.request({ type: 'attachment_begin', name: 'ada.png', mime: 'image/png', size: bytes.length, sha256: sha256(bytes) });
    const inProgress = (begun.data as { attachment_id: string }).attachment_id;
    const data = bytes.toString('base64');
    await sameAsUnknown(bob, inProgress, (id) => ({ type: 'attachment_chunk', attachment_id: id, index: 0, data }));
    await sameAsUnknown(bob, inProgress, (id) => ({ type: 'attachment_end', attachment_id: id }));
    const unsent = ((await uploadAttachment((frame) => ada.request(frame), pngLike(700), 'unsent.png', 'image/png')).data as { attachment_id: string }).attachment_id;
    for (const frame of [
      (id: string) => ({ type: 'get_attachment', attachment_id: id }),
      (id: string) => ({ type: 'attachment_end', attachment_id: id }),
      (id: string) => ({ type: 'chat', message: 'mine now', attachments: [id] }),
    ]) {
      const reply = await sameAsUnknown(bob, unsent, frame);
      assert.equal(reply.code, 'not_found');
    }
    assert.equal((await ada.request({ type: 'chat', message: 'start', attachments: [inProgress] })).code, 'not_found', 'still in progress');
  });
});

describe('a conversation is, to a webhook account that did not start it, no conversation at all', () => {
  test('a webhook post naming ada’s conversation is answered as one naming an unknown id', async () => {
    svc.fake.script({ text: 'ada’s reply' });
    const started = await ada.request({ type: 'chat', message: 'ada’s own conversation' });
    const conversationId = (started.data as { conversation_id: string }).conversation_id;
    const post = async (id: string) => {
      const reply = await postJson(`${svc.httpUrl}/hooks/alpha`, { message: 'from the hook', conversation_id: id });
      return { http: reply.status, ...reply.body };
    };
    const reply = await sameAsUnknown({ request: (frame) => post(String(frame.conversation_id)) }, conversationId, (id) => ({ type: 'webhook', conversation_id: id }));
    assert.equal(reply.http, 404);
    const messages = (await ada.request({ type: 'get_messages', conversation_id: conversationId })).data as { messages: { content: string }[] };
    assert.ok(!messages.messages.some((m) => m.content === 'from the hook'), 'the hook wrote into ada’s conversation');
  });
});
