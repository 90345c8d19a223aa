// A deleted conversation's files (s33, blobs33): the blob store held its attachments' bytes and its turns'
// before/after images for good after delete_conversation or retention (nothing freed a blob for a
// deletion), and the uploader could still read a sent attachment of a deleted conversation. Now the
// deletion removes the attachments' rows with the conversation (one journaled transaction), and the
// maintenance's blob collection removes every blob no row refers to any more; bytes another
// conversation or person still refers to stay. Real sockets, a real data directory.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { BLOBS_DIR_NAME } from '../../src/store/blob-store';
import { downloadAttachment, sha256, uploadAttachment } from '../helpers/attachments';
import { passwordUsers, sessionClient } from '../helpers/service';
import { retireNow } from '../helpers/store-utils';
import { useService } from '../helpers/service-fixture';
import type { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
const PASSWORD = 'correct horse battery staple';
let ada: TestClient | undefined;

const svc = useService({
  workspace: true,
  config: async () => ({ model: 'fake-model', permission_mode: 'allow', users: await passwordUsers(PASSWORD, 'ada') }),
  afterStart: async (started) => {
    ada = await sessionClient(started, 'ada', PASSWORD);
  },
});
after(() => ada?.close());

const requestOf = (client: TestClient) => (frame: Frame) => client.request(frame);
const blobPresent = (bytes: Buffer | string) => {
  const hash = sha256(Buffer.from(bytes));
  return stat(path.join(svc.dataDir, BLOBS_DIR_NAME, hash.slice(0, 2), hash)).then(
    () => true,
    () => false,
  );
};
const unique = (label: string) => Buffer.from(`${label} ${randomUUID()}\n`);

async function upload(client: TestClient, bytes: Buffer, name: string): Promise<string> {
  const done = await uploadAttachment(requestOf(client), bytes, name, 'text/plain');
  assert.equal(done.status, 'ok', JSON.stringify(done));
  return (done.data as { attachment_id: string }).attachment_id;
}

/** A conversation of `client`'s: a chat carrying `attachmentId` whose turn overwrites `file` (before: `old`) with `content`. */
async function conversationWithFiles(client: TestClient, attachmentId: string, file: string, old: string, content: string): Promise<string> {
  await writeFile(path.join(svc.workspace, file), old);
  svc.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: file, content } }] }, { text: 'written' });
  const chat = await client.request({ type: 'chat', message: 'see attached, and write it', attachments: [attachmentId] });
  assert.equal(chat.status, 'ok', JSON.stringify(chat));
  const id = (chat.data as { conversation_id: string }).conversation_id;
  await client.next((f) => f.event === 'turn.ended' && f.conversation_id === id, 10_000);
  return id;
}

test('delete_conversation frees its attachment and its turn’s before/after images; bytes another conversation refers to stay; nobody reads the attachment', async () => {
  const owner = await svc.client();
  const mine = unique('attachment of the deleted conversation');
  const shared = unique('attachment sent in both');
  const old = `before ${randomUUID()}\n`;
  const written = `after ${randomUUID()}\n`;
  const attachment = await upload(ada!, mine, 'mine.txt');
  const sharedHere = await upload(ada!, shared, 'shared.txt');
  const doomed = await conversationWithFiles(ada!, attachment, 'doomed.txt', old, written);
  // The shared bytes: carried by a message of the doomed conversation and, uploaded again by the owner, of a kept one.
  svc.fake.script({ text: 'ok' });
  const also = await ada!.request({ type: 'chat', message: 'and this', conversation_id: doomed, attachments: [sharedHere] });
  assert.equal(also.status, 'ok', JSON.stringify(also));
  await ada!.next((f) => f.event === 'turn.ended' && f.conversation_id === doomed, 10_000);
  const sharedThere = await upload(owner, shared, 'shared-again.txt');
  const keptOld = `kept before ${randomUUID()}\n`;
  const kept = await conversationWithFiles(owner, sharedThere, 'kept.txt', keptOld, written);
  for (const bytes of [mine, shared, old, written, keptOld]) assert.equal(await blobPresent(bytes), true, 'stored while the conversation lives');

  const deleted = await owner.request({ type: 'delete_conversation', conversation_id: doomed });
  assert.equal(deleted.status, 'ok', JSON.stringify(deleted));
  for (const [who, client] of [
    ['its uploader', ada!],
    ['the owner', owner],
  ] as const) {
    const read = await client.request({ type: 'get_attachment', attachment_id: attachment, offset: 0 });
    assert.equal(read.code, 'not_found', `${who} still reads a deleted conversation's attachment: ${JSON.stringify(read).slice(0, 200)}`);
  }
  await svc.service.store.maintenance.run();
  assert.equal(await blobPresent(mine), false, 'the deleted conversation’s attachment bytes are freed');
  assert.equal(await blobPresent(old), false, 'its turn’s before-image is freed');
  assert.equal(await blobPresent(shared), true, 'bytes a kept conversation’s attachment carries stay');
  assert.equal(await blobPresent(written), true, 'an after-image the kept conversation’s turn also wrote stays');
  assert.equal(await blobPresent(keptOld), true, 'the kept turn’s before-image stays');
  assert.deepEqual(await downloadAttachment(requestOf(owner), sharedThere), shared, 'the kept conversation’s attachment reads as before');
  const changes = await owner.request({ type: 'list_turn_changes', conversation_id: kept });
  assert.equal(changes.status, 'ok', JSON.stringify(changes));
});

test('retention frees a retired conversation’s attachment and before/after images', async () => {
  const bytes = unique('attachment of an idle conversation');
  const old = `idle before ${randomUUID()}\n`;
  const written = `idle after ${randomUUID()}\n`;
  const idle = await conversationWithFiles(ada!, await upload(ada!, bytes, 'idle.txt'), 'idle.txt', old, written);
  await retireNow(svc.service.store, idle);
  for (const [what, b] of [
    ['attachment', bytes],
    ['before-image', old],
    ['after-image', written],
  ] as const) {
    assert.equal(await blobPresent(b), false, `the retired conversation’s ${what} is freed`);
  }
});

test('an attachment sent again in a second conversation stays that one’s when the first is deleted, and goes with the second', async () => {
  const owner = await svc.client();
  const bytes = unique('sent in two conversations');
  const id = await upload(ada!, bytes, 'twice.txt');
  const chatIn = async (conversationId?: string) => {
    svc.fake.script({ text: 'seen' });
    const chat = await ada!.request({ type: 'chat', message: 'this file', attachments: [id], ...(conversationId ? { conversation_id: conversationId } : {}) });
    assert.equal(chat.status, 'ok', JSON.stringify(chat));
    const conversation = (chat.data as { conversation_id: string }).conversation_id;
    await ada!.next((f) => f.event === 'turn.ended' && f.conversation_id === conversation, 10_000);
    return conversation;
  };
  const first = await chatIn();
  const second = await chatIn();
  assert.notEqual(first, second);
  assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: first })).status, 'ok');
  await svc.service.store.maintenance.run();
  assert.deepEqual(await downloadAttachment(requestOf(owner), id), bytes, 'the second conversation’s viewers still read it');
  assert.equal(await blobPresent(bytes), true, 'its bytes stay while the second conversation carries them');
  assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: second })).status, 'ok');
  await svc.service.store.maintenance.run();
  assert.equal((await ada!.request({ type: 'get_attachment', attachment_id: id, offset: 0 })).code, 'not_found', 'gone with the last conversation carrying it');
  assert.equal(await blobPresent(bytes), false, 'its bytes are freed with the last conversation carrying it');
});
