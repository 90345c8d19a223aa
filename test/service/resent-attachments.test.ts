// An attachment sent again in a second conversation belongs to that conversation too (s36, resend36; docs/design.md
// "An attachment sent again" and probe33's "Left"). Since s33 (blobs33) a re-send is noted in attachment_uses when
// its message is stored, and deleting the first conversation leaves the attachment to the second. Left open: a chat
// naming it that waits in the second conversation's line (stored, and so noted, only when its turn comes) found the
// row gone when the first was deleted meanwhile: its turn told the model "[Attached ...: no longer available]",
// the stored message named a file nobody could read, and the collection freed the bytes. Real sockets, a real data
// directory (kept across a restart), the fake provider.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { BLOBS_DIR_NAME } from '../../src/store/blob-store';
import { downloadAttachment, pngLike, sha256, uploadAttachment, waitQueued } from '../helpers/attachments';
import { passwordUsers, sessionClient } from '../helpers/service';
import { useFakeProvider } from '../helpers/service-fixture';
import { retireNow } from '../helpers/store-utils';
import { tempDir } from '../helpers/temp';
import type { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
const PASSWORD = 'correct horse battery staple';
const rig = useFakeProvider({ workspace: true });
const LIMIT = { timeout: 60_000 };

const config = async () => ({ model: 'fake-model', vision_models: { 'fake-model': true }, users: await passwordUsers(PASSWORD, 'ada', 'cy') });
const requestOf = (client: TestClient) => (frame: Frame) => client.request(frame);
const blobPresent = (dataDir: string, bytes: Buffer) => {
  const hash = sha256(bytes);
  return stat(path.join(dataDir, BLOBS_DIR_NAME, hash.slice(0, 2), hash)).then(
    () => true,
    () => false,
  );
};
/** An image of its own bytes (a vision model gets them as a data: URL, so the request shows whether they reached it). */
const image = () => Buffer.concat([pngLike(64), Buffer.from(randomUUID())]);

async function upload(client: TestClient, bytes: Buffer): Promise<string> {
  const done = await uploadAttachment(requestOf(client), bytes, 'photo.png', 'image/png');
  assert.equal(done.status, 'ok', JSON.stringify(done));
  return (done.data as { attachment_id: string }).attachment_id;
}

async function chat(client: TestClient, frame: Frame): Promise<string> {
  rig.fake.script({ text: 'seen' });
  const answer = await client.request({ type: 'chat', message: 'this photo', ...frame }, 20_000);
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  return (answer.data as { conversation_id: string }).conversation_id;
}

/** What anyone gets for an attachment id, its id taken out: an unknown id's answer must read the same. */
async function answerFor(client: TestClient, attachmentId: string): Promise<string> {
  const read = await client.request({ type: 'get_attachment', attachment_id: attachmentId, offset: 0 });
  const sent = await client.request({ type: 'chat', message: 'guessing', attachments: [attachmentId] });
  return JSON.stringify([read.status, read.code, read.error, sent.status, sent.code, sent.error]).replaceAll(attachmentId, '<id>');
}

test('sent again in a second conversation: its viewers read it and the model gets it after the first is deleted and a restart; deleting both frees it', LIMIT, async () => {
  const data = await tempDir('ra-resend36-');
  try {
    let svc = await rig.start(await config(), { dataDir: data.dir });
    let owner = await svc.client();
    let ada = await sessionClient(svc, 'ada', PASSWORD);
    const bytes = image();
    const id = await upload(ada, bytes);
    const first = await chat(ada, { attachments: [id] });
    const second = await chat(owner, { attachments: [id] }); // the owner sends it again, in a new conversation
    assert.notEqual(first, second);
    assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: first })).status, 'ok');
    await svc.service.store.maintenance.run();
    for (const client of [owner, ada]) assert.deepEqual(await downloadAttachment(requestOf(client), id), bytes, 'read through the second conversation');
    assert.equal(await blobPresent(svc.dataDir, bytes), true, 'its bytes stay while the second conversation carries it');
    ada.close();
    await svc.stop();

    svc = await rig.start({}, { dataDir: data.dir, keepConfig: true });
    owner = await svc.client();
    ada = await sessionClient(svc, 'ada', PASSWORD);
    assert.deepEqual(await downloadAttachment(requestOf(owner), id), bytes, 'read after a restart');
    const asked = rig.fake.requests.length;
    await chat(ada, { conversation_id: second, message: 'and again?' });
    assert.ok(rig.fake.requests.length > asked);
    assert.ok(JSON.stringify(rig.fake.requests.slice(asked).map((r) => r.body)).includes(bytes.toString('base64')), 'the second conversation’s next turn gives the model the image');

    assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: second })).status, 'ok');
    await svc.service.store.maintenance.run();
    assert.equal(await answerFor(ada, id), await answerFor(ada, randomUUID()), 'gone with the last conversation carrying it, as an unknown id');
    assert.equal(await blobPresent(svc.dataDir, bytes), false, 'its bytes are freed with the last conversation carrying it');
    ada.close();
    await svc.stop();
  } finally {
    await data.cleanup();
  }
});

/**
 * ada's image sent in a first conversation, and sent again by her in a chat (`clientMessageId`) waiting in a
 * second's line: the second's next turn (the owner's) is held open until `open` is called.
 */
async function resendWaiting(owner: TestClient, ada: TestClient, clientMessageId: string) {
  const bytes = image();
  const id = await upload(ada, bytes);
  const first = await chat(ada, { attachments: [id] });
  const second = await chat(owner, { message: 'another conversation' });
  let open = (): void => undefined;
  const held = new Promise((resolve) => (open = () => resolve(undefined)));
  rig.fake.script({ text: 'a long answer in two chunks', chunks: 2, holdAfterChunks: { chunks: 1, until: held } }, { text: 'seen again' });
  const running = owner.request({ type: 'chat', conversation_id: second, message: 'a long turn', stream: true }, 30_000);
  const queued = ada.request({ type: 'chat', conversation_id: second, message: 'this photo again', attachments: [id], client_message_id: clientMessageId }, 30_000);
  await waitQueued(owner, second, 1);
  return { bytes, id, first, second, open, running, queued };
}

for (const deletion of ['delete_conversation', 'retention'] as const)
  test(`a chat naming it that waits in the second conversation’s line keeps it through the first’s deletion (${deletion}); someone else guessing the id learns nothing`, LIMIT, async () => {
    const svc = await rig.start(await config());
    const owner = await svc.client();
    const ada = await sessionClient(svc, 'ada', PASSWORD);
    const cy = await sessionClient(svc, 'cy', PASSWORD);
    try {
      const { bytes, id, first, second, open, running, queued } = await resendWaiting(owner, ada, 'resend36');

      const { store } = svc.service;
      if (deletion === 'delete_conversation') {
        assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: first })).status, 'ok');
        await store.maintenance.run();
      } else {
        await retireNow(store, first);
      }
      // Meanwhile no message carries it: nobody else learns it exists.
      assert.equal(await answerFor(cy, id), await answerFor(cy, randomUUID()), 'a third person guessing the id while it waits gets an unknown id’s answer');
      assert.equal(await answerFor(ada, id), await answerFor(ada, randomUUID()), 'its uploader too: a deleted conversation’s attachment is nobody’s');

      const asked = rig.fake.requests.length;
      open();
      assert.equal((await running).status, 'ok');
      const answered = await queued;
      assert.equal(answered.status, 'ok', JSON.stringify(answered));
      const waitingTurn = JSON.stringify(rig.fake.requests.slice(asked).map((r) => r.body));
      assert.ok(!waitingTurn.includes('no longer available'), 'the waiting turn did not tell the model the file is gone');
      assert.ok(waitingTurn.includes(bytes.toString('base64')), 'the waiting turn gave the model the image');
      await svc.service.store.maintenance.run();
      for (const client of [owner, cy]) assert.deepEqual(await downloadAttachment(requestOf(client), id), bytes, 'read through the second conversation');
      assert.equal(await blobPresent(svc.dataDir, bytes), true, 'its bytes stay while the second conversation carries it');

      assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: second })).status, 'ok');
      await svc.service.store.maintenance.run();
      assert.equal(await answerFor(cy, id), await answerFor(cy, randomUUID()), 'both deleted: a guess gets an unknown id’s answer');
      assert.equal(await answerFor(ada, id), await answerFor(ada, randomUUID()), 'its uploader too');
      assert.equal(await blobPresent(svc.dataDir, bytes), false, 'freed with the last conversation carrying it');
    } finally {
      ada.close();
      cy.close();
    }
  });

// attack36: a held file outliving every carrier and its hold. The chat naming it is taken out of the line after
// the first conversation's deletion and the collection that left it (held): no message will carry it, no one
// reads it, and nothing owed a collection any more, so without the hold's release asking for one, its bytes
// stayed on disk until some later, unrelated deletion (or a restart); a person could do it at will.
test('a chat naming it taken out of the line after the collection passed it over: its bytes are freed without another deletion', LIMIT, async () => {
  const svc = await rig.start(await config());
  const owner = await svc.client();
  const ada = await sessionClient(svc, 'ada', PASSWORD);
  try {
    const { bytes, id, first, second, open, running, queued } = await resendWaiting(owner, ada, 'taken-back');

    const { store } = svc.service;
    assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: first })).status, 'ok');
    await store.maintenance.run();
    assert.equal(await blobPresent(svc.dataDir, bytes), true, 'held: the collection leaves it while the chat waits');

    const removed = await ada.request({ type: 'remove_queued', conversation_id: second, client_message_id: 'taken-back' });
    assert.deepEqual(removed.data, { removed: true });
    assert.equal(((await queued).data as { cancelled?: boolean }).cancelled, true);
    // The next pass (the periodic one, or this): nothing else was deleted meanwhile.
    await store.maintenance.run();
    assert.equal(await blobPresent(svc.dataDir, bytes), false, 'its bytes are freed once nothing holds it');
    assert.equal(store.attachments.get(id), undefined, 'its row too');
    assert.equal(await answerFor(ada, id), await answerFor(ada, randomUUID()), 'an unknown id’s answer, its uploader too');
    open();
    assert.equal((await running).status, 'ok');
  } finally {
    ada.close();
  }
});
