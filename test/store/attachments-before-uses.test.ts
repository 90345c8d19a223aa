// Attachments bound before migration 25 (s33): a message of another conversation may carry one (sent again),
// which nothing recorded then (attachment_uses came with 25; the message's body, in history.db, is the only
// trace). Deleting its first conversation, before the upgrade or after, must not free it under the other:
// such rows stay as a deletion left them before s33. Real stores in temp dirs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collectBlobs } from '../../src/store/blob-collection';
import { trashConversation } from '../../src/store/conversations';
import { MIGRATIONS, openStore, type Store } from '../../src/store/index';
import { nullLogger } from '../../src/log/logger';
import { tempDir } from '../helpers/temp';

const BEFORE_USES = MIGRATIONS.slice(0, 24);

async function attach(store: Store, id: string, conversationId: string, bytes: string): Promise<string> {
  const { hash } = await store.blobs.put(bytes);
  await store.attachments.add({ id, hash, name: `${id}.txt`, mime: 'text/plain', kind: 'file', size: bytes.length, uploader: 'owner', created_at: new Date().toISOString() });
  await store.db.write((tx) => tx.run('UPDATE attachments SET conversation_id = ? WHERE id = ?', [conversationId, id]));
  return hash;
}

test('an attachment bound before migration 25 survives its conversation’s deletion (before the upgrade or after), one bound after it does not', async (t) => {
  const { dir, cleanup } = await tempDir('ra-before-uses-');
  t.after(cleanup);
  const old = await openStore(dir, { migrations: BEFORE_USES });
  for (const id of ['a', 'b', 'gone']) await old.conversations.create({ id, title: id, source: 'ws', created_at: new Date().toISOString() });
  // 'a's attachment, sent again in 'b' (only b's message body says so), and 'gone's, sent again in 'b' too,
  // whose conversation was deleted before the upgrade (a deletion then kept attachment rows).
  const sentAgain = await attach(old, 'att-a', 'a', 'bytes b still shows');
  const fromGone = await attach(old, 'att-gone', 'gone', 'bytes of a conversation deleted before');
  // (Its row gone as a deletion then left it: trashConversation now needs migration 25's table.)
  await old.db.write((tx) => tx.run("DELETE FROM conversations WHERE id = 'gone'"));
  await old.close();

  const store = await openStore(dir);
  t.after(() => store.close());
  await collectBlobs(store.db, store.blobs, nullLogger);
  assert.ok(store.attachments.get('att-gone'), 'deleted before the upgrade: its row stays');
  assert.equal(await store.blobs.has(fromGone), true, 'and its bytes');

  await store.db.write((tx) => trashConversation(tx, 'a'));
  await collectBlobs(store.db, store.blobs, nullLogger);
  assert.ok(store.attachments.get('att-a'), 'deleted after the upgrade: its row stays');
  assert.equal(await store.blobs.has(sentAgain), true, 'and its bytes');

  // One bound after the upgrade, where a sending again is recorded: freed with its conversation.
  const later = await attach(store, 'att-later', 'b', 'bytes bound after the upgrade');
  await store.db.write((tx) => trashConversation(tx, 'b'));
  await collectBlobs(store.db, store.blobs, nullLogger);
  assert.equal(store.attachments.get('att-later'), undefined);
  assert.equal(await store.blobs.has(later), false);
});
