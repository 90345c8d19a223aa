// A held attachment (a chat naming it waits in another conversation's line) outlives the deletion of the
// conversation that carried it, then follows the waiting message once stored (s36, resend36). The attack: the
// held ids are a deletion's parameters, and a password user can make many of them (chats waiting with ten
// attachments each); spelled as one SQL variable each, 32,767 of them made every deletion fail ("too many
// SQL variables"), so no conversation could be deleted or retired meanwhile. A real store in a temp dir.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { nullLogger } from '../../src/log/logger';
import { bindAttachments } from '../../src/store/attachments';
import { collectBlobs } from '../../src/store/blob-collection';
import { openStore, type Store } from '../../src/store/index';
import { tempDir } from '../helpers/temp';

async function attach(store: Store, id: string, conversationId: string, bytes: string): Promise<string> {
  const { hash } = await store.blobs.put(bytes);
  await store.attachments.add({ id, hash, name: `${id}.txt`, mime: 'text/plain', kind: 'file', size: bytes.length, uploader: 'ada', created_at: new Date().toISOString() });
  await store.db.write((tx) => {
    for (const op of bindAttachments([id], conversationId)) tx.run(op.sql, op.params);
  });
  return hash;
}

test('a held attachment outlives its conversation’s deletion, however many ids are held, and follows the waiting message', async (t) => {
  const { dir, cleanup } = await tempDir('ra-holds-');
  t.after(cleanup);
  const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
  t.after(() => store.close());
  for (const id of ['first', 'second']) await store.conversations.create({ id, title: id, source: 'ws', created_at: new Date().toISOString() });
  const held = await attach(store, 'held', 'first', 'bytes a waiting chat names');
  const other = await attach(store, 'other', 'first', 'bytes nothing else names');

  // Far more held ids than SQLite takes variables (32,766), as many waiting chats would hold.
  const many = Array.from({ length: 40_000 }, () => randomUUID());
  const release = store.attachments.holds.hold([...many, 'held']);
  assert.equal(await store.conversations.delete('first'), true, 'deleted, whatever is held');
  assert.equal(store.attachments.get('other'), undefined, 'an attachment nothing holds goes with it');
  assert.equal(store.attachments.get('held')?.conversation_id, 'first', 'the held one stays, no conversation carrying it');
  await collectBlobs(store.db, store.blobs, nullLogger, store.attachments.holds);
  assert.ok(store.attachments.get('held'), 'the orphan pass leaves it while held');
  assert.equal(await store.blobs.has(held), true);
  assert.equal(await store.blobs.has(other), false);

  // The waiting message is stored in 'second': its use is noted, and the orphan pass leaves the row to it.
  await store.db.write((tx) => {
    for (const op of bindAttachments(['held'], 'second')) tx.run(op.sql, op.params);
  });
  release();
  await collectBlobs(store.db, store.blobs, nullLogger, store.attachments.holds);
  assert.equal(store.attachments.get('held')?.conversation_id, 'second');
  assert.deepEqual(store.attachments.carriers('held'), ['second']);

  assert.equal(await store.conversations.delete('second'), true);
  await collectBlobs(store.db, store.blobs, nullLogger, store.attachments.holds);
  assert.equal(store.attachments.get('held'), undefined, 'gone with the last conversation carrying it');
  assert.equal(await store.blobs.has(held), false);
});

test('a held attachment whose waiting chat is removed goes at the next orphan pass', async (t) => {
  const { dir, cleanup } = await tempDir('ra-holds-');
  t.after(cleanup);
  const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
  t.after(() => store.close());
  await store.conversations.create({ id: 'first', title: 'first', source: 'ws', created_at: new Date().toISOString() });
  const held = await attach(store, 'held', 'first', 'bytes of a chat taken back');
  const release = store.attachments.holds.hold(['held']);
  await store.conversations.delete('first');
  release();
  await collectBlobs(store.db, store.blobs, nullLogger, store.attachments.holds);
  assert.equal(store.attachments.get('held'), undefined);
  assert.equal(await store.blobs.has(held), false);
});
