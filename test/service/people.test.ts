// Two password users are two people (issue 20, item 5): what is a person's own (an unsent upload, a
// waiting message, the answer to a resend, a push device) is not another user's to touch, whatever
// socket or credential kind they share. Each surface through real sockets, with the attack first.
// And names shown to a person carry no bidi override (issue 20: `gnp\u202Eexe.png` shows as `gnpgnp.exe`).
import assert from 'node:assert/strict';
import { createECDH, randomBytes, randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { MIGRATIONS, openStore } from '../../src/store';
import { hashPassword } from '../../src/transport/auth/passwords';
import { pngLike, sha256, uploadAttachment } from '../helpers/attachments';
import { sessionClient, startService } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const PASSWORD = 'correct horse battery staple';
let owner: TestClient;
let ada: TestClient;
let bob: TestClient;

const svc = useService({
  // A sent file is saved into the workspace for the model: a temp one, not the current directory.
  workspace: true,
  config: async () => {
    const password_hash = await hashPassword(PASSWORD);
    return {
      model: 'fake-model',
      users: [
        { username: 'ada', password_hash },
        { username: 'bob', password_hash },
      ],
    };
  },
  afterStart: async (started) => {
    owner = await started.client();
    ada = await sessionClient(started, 'ada', PASSWORD);
    bob = await sessionClient(started, 'bob', PASSWORD);
  },
});

after(() => {
  ada?.close();
  bob?.close();
});

/** A browser's subscription keys (a P-256 point and 16 auth bytes), as push_subscribe wants them. */
const pushKeys = () => {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
};
const subscribe = (client: TestClient, deviceId: string, endpoint: string, deviceName = 'phone') =>
  client.request({ type: 'push_subscribe', device_id: deviceId, device_name: deviceName, subscription: { endpoint, keys: pushKeys() } });

const codeOf = (reply: Record<string, unknown>) => ({ status: reply.status, code: reply.code });
const completions = () => svc.fake.requests.filter((r) => r.path.startsWith('/v1/chat/completions')).length;

describe('an unsent upload is its uploader’s only', () => {
  test('attack: another password user cannot write into, finish, read or send it', async () => {
    const bytes = pngLike(900);
    const begun = await ada.request({ type: 'attachment_begin', name: 'ada.png', mime: 'image/png', size: bytes.length, sha256: sha256(bytes) });
    const id = (begun.data as { attachment_id: string }).attachment_id;
    const chunk = { type: 'attachment_chunk', attachment_id: id, index: 0, data: bytes.toString('base64') };
    assert.deepEqual(codeOf(await bob.request(chunk)), { status: 'error', code: 'not_found' }, 'bob writes into ada’s upload');
    assert.equal((await ada.request(chunk)).status, 'ok');
    assert.deepEqual(codeOf(await bob.request({ type: 'attachment_end', attachment_id: id })), { status: 'error', code: 'not_found' }, 'bob finishes it');
    assert.equal((await ada.request({ type: 'attachment_end', attachment_id: id })).status, 'ok', 'ada still finishes her own');
    assert.deepEqual(codeOf(await bob.request({ type: 'get_attachment', attachment_id: id })), { status: 'error', code: 'not_found' }, 'bob reads it');
    const before = completions();
    assert.deepEqual(codeOf(await bob.request({ type: 'chat', message: 'mine now', attachments: [id] })), { status: 'error', code: 'not_found' }, 'bob sends it');
    assert.equal(completions(), before, 'nothing ran');
    assert.equal((await ada.request({ type: 'get_attachment', attachment_id: id })).status, 'ok');
    assert.equal((await ada.request({ type: 'chat', message: 'look', attachments: [id] })).status, 'ok');
  });
});

describe('a waiting message is its sender’s (and the owner’s) to remove', () => {
  test('attack: another password user cannot take it out of the queue', async () => {
    const start = await ada.request({ type: 'chat', message: 'start' });
    const conversationId = (start.data as { conversation_id: string }).conversation_id;
    const before = completions();
    svc.fake.script({ text: 'slow answer', delayMs: 1200 }, { text: 'ada’s queued answer' });
    const running = ada.request({ type: 'chat', message: 'long one', conversation_id: conversationId, client_message_id: 'ada-run-1' });
    await svc.fake.waitFor(() => completions() === before + 1);
    const waiting = ada.request({ type: 'chat', message: 'queued by ada', conversation_id: conversationId, client_message_id: 'ada-wait-1' });
    await bob.next((f) => f.event === 'conversation.updated' && f.conversation_id === conversationId && ((f.conversation as { queued?: unknown[] }).queued?.length ?? 0) > 0);

    const removed = await bob.request({ type: 'remove_queued', conversation_id: conversationId, client_message_id: 'ada-wait-1' });
    assert.deepEqual(removed.data, { removed: false }, 'bob removed ada’s waiting message');
    assert.equal(((await running).data as { response: string }).response, 'slow answer');
    const answer = await waiting;
    assert.equal(answer.status, 'ok', JSON.stringify(answer));
    assert.deepEqual(answer.data, { response: 'ada’s queued answer', conversation_id: conversationId }, 'ada’s message ran');
  });

  test('the sender, and the owner, may still remove it', async () => {
    const start = await ada.request({ type: 'chat', message: 'start again' });
    const conversationId = (start.data as { conversation_id: string }).conversation_id;
    const before = completions();
    svc.fake.script({ text: 'slow', delayMs: 1200 });
    const running = ada.request({ type: 'chat', message: 'long', conversation_id: conversationId });
    await svc.fake.waitFor(() => completions() === before + 1);
    const first = ada.request({ type: 'chat', message: 'one', conversation_id: conversationId, client_message_id: 'ada-wait-2' });
    const second = ada.request({ type: 'chat', message: 'two', conversation_id: conversationId, client_message_id: 'ada-wait-3' });
    await waitFor(async () => {
      const rows = ((await owner.request({ type: 'list_conversations' })).data as { conversations: { id: string; queued: unknown[] }[] }).conversations;
      return rows.find((c) => c.id === conversationId)?.queued.length === 2;
    }, 'both messages to wait');
    assert.deepEqual((await ada.request({ type: 'remove_queued', conversation_id: conversationId, client_message_id: 'ada-wait-2' })).data, { removed: true });
    assert.deepEqual((await owner.request({ type: 'remove_queued', conversation_id: conversationId, client_message_id: 'ada-wait-3' })).data, { removed: true });
    assert.equal(((await first).data as { cancelled?: boolean }).cancelled, true);
    assert.equal(((await second).data as { cancelled?: boolean }).cancelled, true);
    await running;
  });
});

describe('a resend is answered only to its sender', () => {
  test('attack: another password user resending the same client_message_id gets a chat of its own, not the stored answer', async () => {
    svc.fake.script({ text: 'ada’s private answer' });
    const first = await ada.request({ type: 'chat', message: 'what is my secret?', client_message_id: 'shared-id-1' });
    assert.equal((first.data as { response: string }).response, 'ada’s private answer');
    const before = completions();
    const resent = await bob.request({ type: 'chat', message: 'what is my secret?', client_message_id: 'shared-id-1' });
    assert.equal(resent.status, 'ok', JSON.stringify(resent));
    const data = resent.data as { response: string; conversation_id: string };
    assert.notEqual(data.response, 'ada’s private answer', 'bob received ada’s answer');
    assert.notEqual(data.conversation_id, (first.data as { conversation_id: string }).conversation_id);
    assert.equal(completions(), before + 1, 'bob’s chat ran as his own');
    // Ada's own resend is still recognised: answered from what was stored, nothing runs.
    const again = await ada.request({ type: 'chat', message: 'what is my secret?', client_message_id: 'shared-id-1' });
    assert.deepEqual(again.data, first.data);
    assert.equal(completions(), before + 1);
  });

  test('the same person resending on another socket is still recognised', async () => {
    const other = await sessionClient(svc, 'ada', PASSWORD);
    try {
      const first = await ada.request({ type: 'chat', message: 'once', client_message_id: 'ada-two-sockets' });
      const before = completions();
      const again = await other.request({ type: 'chat', message: 'once', client_message_id: 'ada-two-sockets' });
      assert.deepEqual(again.data, first.data);
      assert.equal(completions(), before);
    } finally {
      other.close();
    }
  });
});

describe('a push device is its subscriber’s', () => {
  test('attack: another password user cannot re-subscribe, change, test or remove it (nor learn it exists)', async () => {
    const device = randomUUID();
    assert.equal((await subscribe(ada, device, 'https://push.example.com/ada')).status, 'ok');
    const taken = await subscribe(bob, device, 'https://push.example.com/bob');
    assert.deepEqual(codeOf(taken), { status: 'error', code: 'unauthorized' }, 'bob re-subscribed ada’s device');
    assert.equal(svc.service.store.pushDevices.get(device)?.endpoint, 'https://push.example.com/ada', 'ada’s notifications still go to ada');
    // To bob, ada's device is no device at all (people-unseen.test.ts compares each answer with an unknown id's).
    for (const frame of [
      { type: 'push_settings', device_id: device, events: { prompt: false } },
      { type: 'push_test', device_id: device },
    ]) {
      assert.deepEqual(codeOf(await bob.request(frame)), { status: 'error', code: 'not_found' }, frame.type);
    }
    assert.deepEqual((await bob.request({ type: 'push_unsubscribe', device_id: device })).data, { removed: false });
    assert.equal(svc.service.store.pushDevices.get(device)?.events.prompt, true, 'ada’s settings are unchanged');
    const bobsView = ((await bob.request({ type: 'list_push_devices' })).data as { devices: { device_id: string }[] }).devices;
    assert.ok(!bobsView.some((d) => d.device_id === device), 'bob does not see ada’s device');
    // Ada re-subscribes her own device; the owner still sees and may remove every device.
    assert.equal((await subscribe(ada, device, 'https://push.example.com/ada2')).status, 'ok');
    const ownersView = ((await owner.request({ type: 'list_push_devices' })).data as { devices: { device_id: string }[] }).devices;
    assert.ok(ownersView.some((d) => d.device_id === device));
    assert.deepEqual((await owner.request({ type: 'push_unsubscribe', device_id: device })).data, { removed: true });
  });

  test('attack: another password user cannot subscribe a new device id to an endpoint that is someone else’s', async () => {
    const endpoint = `https://push.example.com/ada-${randomUUID()}`;
    assert.equal((await subscribe(ada, randomUUID(), endpoint)).status, 'ok');
    const second = randomUUID();
    assert.deepEqual(codeOf(await subscribe(bob, second, endpoint)), { status: 'error', code: 'unauthorized' });
    assert.equal(svc.service.store.pushDevices.get(second), undefined, 'nothing stored');
  });
});

describe('names shown to a person carry no bidi override or control character', () => {
  test('an upload named gnp\\u202Eexe.png is stored and shown without the override', async () => {
    const bytes = Buffer.from('MZ not really an exe');
    const done = await uploadAttachment((f) => ada.request(f), bytes, 'gnp\u202Eexe.png\u0007', 'application/octet-stream');
    assert.equal(done.status, 'ok', JSON.stringify(done));
    const info = done.data as { attachment_id: string; name: string };
    assert.equal(info.name, 'gnpexe.png');
    assert.equal(svc.service.store.attachments.get(info.attachment_id)?.name, 'gnpexe.png');
    const read = await ada.request({ type: 'get_attachment', attachment_id: info.attachment_id });
    assert.equal((read.data as { name: string }).name, 'gnpexe.png');
  });

  test('a name made only of such characters is refused clearly', async () => {
    const bytes = Buffer.from('x');
    const reply = await ada.request({ type: 'attachment_begin', name: '\u202E\u2066\u200F', mime: 'text/plain', size: 1, sha256: sha256(bytes) });
    assert.deepEqual(codeOf(reply), { status: 'error', code: 'invalid_request' });
  });

  test('a name with a lone surrogate is stored and shown with U+FFFD in its place, as the store reads it back', async () => {
    // sql.js binds UTF-8, which cannot hold a lone surrogate: the name is made well-formed where it enters.
    const done = await uploadAttachment((f) => ada.request(f), Buffer.from('lone'), 'photo\ud800.png', 'application/octet-stream');
    assert.equal(done.status, 'ok', JSON.stringify(done));
    const info = done.data as { attachment_id: string; name: string };
    assert.equal(info.name, 'photo\ufffd.png');
    assert.equal(svc.service.store.attachments.get(info.attachment_id)?.name, 'photo\ufffd.png');
    const read = await ada.request({ type: 'get_attachment', attachment_id: info.attachment_id });
    assert.equal((read.data as { name: string }).name, 'photo\ufffd.png');
    const device = randomUUID();
    const reply = await subscribe(ada, device, `https://push.example.com/${device}`, 'Pixel\udc00');
    assert.equal((reply.data as { device: { device_name: string } }).device.device_name, 'Pixel\ufffd');
    assert.equal(svc.service.store.pushDevices.get(device)?.device_name, 'Pixel\ufffd');
  });

  test('a push device name keeps no override', async () => {
    const device = randomUUID();
    const reply = await subscribe(ada, device, `https://push.example.com/${device}`, 'Pixel\u202Eevil');
    assert.equal((reply.data as { device: { device_name: string } }).device.device_name, 'Pixelevil');
  });
});

test('a store from before people were told apart: the owner’s rows stay the owner’s, a password user’s are no other user’s', async () => {
  // Schema 11 (keys by source and credential kind), written as that version did.
  const old = await tempDir('ra-people-old-');
  try {
    const store = await openStore(old.dir, { migrations: MIGRATIONS.slice(0, 11) });
    const bytes = Buffer.from('an unsent file of the owner');
    const { hash } = await store.blobs.put(bytes);
    const at = new Date().toISOString();
    await store.db.write((tx) => {
      tx.run('INSERT INTO conversations (id, title, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', ['c-old', 'old \u202Etitle', 'ws', at, at]);
      const message = 'INSERT INTO messages (id, conversation_id, role, content, timestamp, client_key) VALUES (?, ?, ?, ?, ?, ?)';
      tx.run(message, ['m1', 'c-old', 'user', 'owner question', at, 'relay\u0000access\u0000owner-msg']);
      tx.run(message, ['m2', 'c-old', 'assistant', 'owner answer', at, null]);
      tx.run(message, ['m3', 'c-old', 'user', 'user question', at, 'ws\u0000session\u0000user-msg']);
      tx.run(message, ['m4', 'c-old', 'assistant', 'user answer', at, null]);
      tx.run('INSERT INTO attachments (id, hash, name, mime, kind, size, uploader, created_at, conversation_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)', [
        'att-owner',
        hash,
        'gnp\u202Eexe.png',
        'text/plain',
        'file',
        bytes.length,
        'ws\u0000access',
        at,
      ]);
      const device =
        'INSERT INTO push_devices (device_id, device_name, principal, source, created_at, updated_at, endpoint, p256dh, auth, events, content_blind, failures) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)';
      const events = JSON.stringify({ prompt: true, finished: true, failed: true, webhook: true });
      tx.run(device, ['owner-dev', 'owner phone', 'access', 'relay', at, at, 'https://push.example.com/owner-old', 'p', 'a', events]);
      tx.run(device, ['user-dev', 'user phone', 'session', 'ws', at, at, 'https://push.example.com/user-old', 'p', 'a', events]);
    });
    await store.close();

    const password_hash = await hashPassword(PASSWORD);
    const upgraded = await startService(
      {
        provider: 'openai',
        model: 'fake-model',
        base_url: svc.fake.url,
        workspace: svc.workspace,
        users: [
          { username: 'ada', password_hash },
          { username: 'bob', password_hash },
        ],
      },
      { dataDir: old.dir },
    );
    const clients = [await TestClient.authed(upgraded.wsUrl, upgraded.token), await sessionClient(upgraded, 'ada', PASSWORD), await sessionClient(upgraded, 'bob', PASSWORD)];
    const [theOwner, theAda, theBob] = clients;
    try {
      const before = completions();
      // The owner's resend (now on the LAN socket) is answered from the store; a password user's old id is no one's now.
      const resent = await theOwner.request({ type: 'chat', message: 'owner question', client_message_id: 'owner-msg' });
      assert.deepEqual(resent.data, { response: 'owner answer', conversation_id: 'c-old' });
      assert.equal(completions(), before);
      const userResend = await theBob.request({ type: 'chat', message: 'user question', client_message_id: 'user-msg' });
      assert.notEqual((userResend.data as { response: string }).response, 'user answer', 'an old password user’s answer goes to no other user');

      const ownersFile = await theOwner.request({ type: 'get_attachment', attachment_id: 'att-owner' });
      assert.equal(ownersFile.status, 'ok', 'the owner’s unsent upload is still the owner’s');
      assert.equal((ownersFile.data as { name: string }).name, 'gnpexe.png', 'a name stored before is cleaned too');
      assert.equal(upgraded.service.store.conversations.get('c-old')?.title, 'old title');
      assert.deepEqual(codeOf(await theAda.request({ type: 'get_attachment', attachment_id: 'att-owner' })), { status: 'error', code: 'not_found' });

      assert.deepEqual(codeOf(await subscribe(theAda, 'owner-dev', 'https://push.example.com/ada-x')), { status: 'error', code: 'unauthorized' });
      assert.equal((await subscribe(theOwner, 'owner-dev', 'https://push.example.com/owner-new')).status, 'ok');
      // The old password user's device: the first password user to subscribe it again takes it, then it is theirs.
      assert.equal((await subscribe(theAda, 'user-dev', 'https://push.example.com/ada-new')).status, 'ok');
      assert.deepEqual(codeOf(await subscribe(theBob, 'user-dev', 'https://push.example.com/bob-new')), { status: 'error', code: 'unauthorized' });
      assert.equal(upgraded.service.store.pushDevices.get('user-dev')?.person, 'user:ada');
    } finally {
      for (const client of clients) client.close();
      await upgraded.stop();
    }
  } finally {
    await old.cleanup();
  }
});
