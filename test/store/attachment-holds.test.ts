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
import { COLLECT_FAULT_ENV } from '../../src/store/blob-store';
import { Database } from '../../src/store/database';
import { sha256 } from '../helpers/attachments';
import { heldRows, spawnStoreChild } from '../helpers/store-utils';
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

// attack36: the held ids are a journaled statement's parameter. A process killed -9 after the deletion and its
// collection's orphan pass (before the first file's removal) is replayed from the journal alone, in a process
// holding nothing: the rows must come back as the killed one left them (the held row kept), and the first pass
// after the restart (nothing waits any more) drops the row and frees its bytes.
test('kill -9 after a deletion left a held file: the replay gives the same rows, and the first pass after the restart frees it', async (t) => {
  const { dir, cleanup } = await tempDir('ra-holds-crash-');
  t.after(cleanup);
  const child = spawnStoreChild('held-collect', dir, { [COLLECT_FAULT_ENV]: 'before-remove' });
  t.after(() => child.proc.kill('SIGKILL'));
  const { signal } = await child.exited;
  assert.equal(signal, 'SIGKILL', `the child ended otherwise: ${child.stderr()} ${child.lines.join('|')}`);
  const printed = child.lines.find((line) => line.startsWith('rows '));
  assert.ok(printed !== undefined && !child.lines.includes('collected'), child.lines.join('|'));
  const left = JSON.parse(printed.slice('rows '.length)) as ReturnType<typeof heldRows>;
  assert.deepEqual(
    left,
    {
      attachments: [
        { id: 'held', conversation_id: 'first' },
        { id: 'shared', conversation_id: 'second' },
      ],
      uses: [{ attachment_id: 'shared', conversation_id: 'second' }],
    },
    'the deletion left the held row, dropped the other, left the shared one to the second conversation',
  );

  const db = await Database.open(dir, { holdCompaction: true });
  try {
    assert.deepEqual(heldRows(db), left, 'replayed alike, nothing held in this process');
  } finally {
    await db.close();
  }

  const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
  t.after(() => store.close());
  await store.maintenance.run();
  assert.deepEqual(heldRows(store.db), { ...left, attachments: left.attachments.filter((row) => row.id !== 'held') }, 'the row nothing holds any more is dropped');
  const present = (id: string) => store.blobs.has(sha256(Buffer.from(`${id} bytes`)));
  assert.deepEqual(await Promise.all(['held', 'other', 'shared'].map(present)), [false, false, true], 'its bytes (and the other’s) freed, the shared one’s kept');
});

// attack36: what a deletion journals. The held ids went whole into every deletion's statement (one JSON
// parameter), and into each of the orphan pass's, one per conversation it cleans: with 40,000 held (4,000
// chats waiting, ten files each) a deletion journaled 1.5 MB, and an orphan pass over 1,000 conversations
// whose held rows stayed built a 1.5 GB record and failed ("Invalid string length") at every pass, so no
// blob was freed while the chats waited. Now only the held ids of the deleted conversation's own rows go in.
test('a deletion journals the held ids of its own rows, not every held id', async (t) => {
  const { dir, cleanup } = await tempDir('ra-holds-');
  t.after(cleanup);
  // One segment for everything: nothing is folded away meanwhile, so the journal's growth is what was written.
  const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000, segmentBytes: 1024 * 1024 * 1024 });
  t.after(() => store.close());
  const conversations = Array.from({ length: 10 }, (_, i) => `c${i}`);
  for (const id of conversations) {
    await store.conversations.create({ id, title: id, source: 'ws', created_at: new Date().toISOString() });
    await attach(store, `${id}-held`, id, `bytes held ${id}`);
    await attach(store, `${id}-other`, id, `bytes not held ${id}`);
  }
  const release = store.attachments.holds.hold([...Array.from({ length: 40_000 }, () => randomUUID()), ...conversations.map((id) => `${id}-held`)]);
  t.after(release);
  const before = store.db.stats().journalBytes;
  for (const id of conversations) assert.equal(await store.conversations.delete(id), true);
  await collectBlobs(store.db, store.blobs, nullLogger, store.attachments.holds);
  const journaled = store.db.stats().journalBytes - before;
  for (const id of conversations) {
    assert.equal(store.attachments.get(`${id}-held`)?.conversation_id, id, 'the held row stays');
    assert.equal(store.attachments.get(`${id}-other`), undefined, 'the other goes');
  }
  // 20 statements naming all 40,010 held ids were 31 MB; the deletions themselves are a few KB.
  assert.ok(journaled < 256 * 1024, `ten deletions and an orphan pass journaled ${journaled} bytes`);
});
