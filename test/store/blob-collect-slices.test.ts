// The blob collection's read in slices (s35, collect35): the rows are read a few at a time with the loop
// free between slices, and whatever happens between two slices never gets a referenced blob removed: a
// deletion (no row skipped), a put whose row is written after its slice was read (even at a rowid the read
// has passed), a new reference to a hash the read had not found. A real store in a temp dir, two rows a
// slice, the race run at a chosen pause.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { insertAttachment } from '../../src/store/attachments';
import { blobReferences, unreferencedHashes } from '../../src/store/blob-refs';
import { trashConversation } from '../../src/store/conversations';
import { openStore, type Store } from '../../src/store/index';
import { testDir } from '../helpers/store-utils';

const AT = '2026-01-01T00:00:00.000Z';
const SLICE = 4;

async function opened(t: { after: (fn: () => Promise<void>) => void }): Promise<Store> {
  const store = await openStore(await testDir(t), { maintenanceIntervalMs: 3_600_000 });
  t.after(() => store.close());
  await store.maintenance.run(); // the first pass (and its collection) over before the test's own
  for (const id of ['kept', 'other']) await store.conversations.create({ id, title: id, source: 'ws', created_at: AT });
  return store;
}

/** Puts `count` blobs and an attachment row of `conversation` for each (rowids in that order); their hashes. */
async function attached(store: Store, conversation: string, count: number, tag = conversation): Promise<string[]> {
  const hashes: string[] = [];
  for (let i = 0; i < count; i += 1) hashes.push((await store.blobs.put(`${tag} ${i}`)).hash);
  await store.db.write((tx) => {
    for (const hash of hashes) insertAttachment(tx, row(hash, conversation));
  });
  return hashes;
}

function row(hash: string, conversation: string) {
  return { id: `${conversation}-${hash}`, hash, name: 'a', mime: 'text/plain', kind: 'file' as const, size: 1, uploader: 'owner', created_at: AT, conversation_id: conversation };
}

/** File changes of `kept` naming these hashes (before and after images), so the read goes on after the attachments. */
async function changed(store: Store, hashes: readonly string[]): Promise<void> {
  await store.db.write((tx) => {
    hashes.forEach((hash, i) =>
      tx.run(
        "INSERT INTO file_changes (id, conversation_id, turn_id, kind, tool, root, path, before_hash, after_hash, state, created_at) VALUES (?, 'kept', 't', 'file', 'write_file', '/r', ?, ?, ?, 'done', ?)",
        [`f${i}`, `p${i}`, hash, hash, AT],
      ),
    );
  });
}

/** Collects with SLICE rows a slice, running `race` at pause `at` (1 = between the first two slices); how many pauses there were. */
async function collectRacing(store: Store, at: number, race: () => Promise<void>): Promise<{ removed: number; pauses: number }> {
  let pauses = 0;
  const refs = blobReferences(store.db, {
    sliceRows: SLICE,
    between: async () => {
      pauses += 1;
      if (pauses === at) await race();
      await new Promise((resolve) => setImmediate(resolve));
    },
  });
  const { removed } = await store.blobs.collect(refs);
  return { removed, pauses };
}

async function present(store: Store, hashes: readonly string[]): Promise<string[]> {
  const there: string[] = [];
  for (const hash of hashes) if (await store.blobs.has(hash)) there.push(hash);
  return there;
}

test('a put held before the read whose row is written between two slices, at a rowid the read has passed, keeps its blob', async (t) => {
  const store = await opened(t);
  const kept = await attached(store, 'kept', 20);
  const other = await attached(store, 'other', 1); // the attachments' last rowid (21)
  await changed(store, kept.slice(0, 6));
  // Bytes a deletion left (nothing refers to them), about to be freed, and uploaded again: the put returns at
  // once and is held until its row is written.
  const { hash } = await store.blobs.put('uploaded again');
  let putDone!: () => void;
  const put = new Promise<void>((resolve) => (putDone = resolve));
  let rowMayGo!: () => void;
  const gate = new Promise<void>((resolve) => (rowMayGo = resolve));
  const upload = store.blobs.holding(async (putBlob) => {
    await putBlob('uploaded again');
    putDone();
    await gate;
    await store.db.write((tx) => insertAttachment(tx, row(hash, 'kept')));
  });
  await put;
  // Pauses 1-5 are in the attachments (20 rows, then 1); pause 6 is in the file changes: the attachments are read.
  const { pauses } = await collectRacing(store, 6, async () => {
    await store.db.write((tx) => trashConversation(tx, 'other')); // frees rowid 21, which SQLite gives again
    rowMayGo();
    await upload;
  });
  assert.ok(pauses >= 6, `the race ran (${pauses} pauses)`);
  const reused = store.db.get<{ rowid: number }>('SELECT rowid FROM attachments WHERE hash = ?', [hash]);
  assert.equal(reused?.rowid, 21, 'the upload’s row took the rowid the read had passed');
  assert.equal(await store.blobs.has(hash), true, 'a blob its attachment row refers to was removed');
  assert.deepEqual(await present(store, kept), kept);
  // The deleted conversation's blob was read as referenced before its deletion: the next collection frees it.
  assert.deepEqual(await present(store, other), other);
  assert.equal((await store.blobs.collect(blobReferences(store.db))).removed, 1);
  assert.equal(await store.blobs.has(hash), true);
});

test('a deletion between two slices skips no row: every blob still referred to stays', async (t) => {
  const store = await opened(t);
  const other = await attached(store, 'other', SLICE); // the first slice
  const kept = await attached(store, 'kept', 20);
  await changed(store, kept.slice(14)); // not the first ones: read paged by OFFSET would skip those
  const { pauses } = await collectRacing(store, 1, async () => {
    await store.db.write((tx) => trashConversation(tx, 'other'));
  });
  assert.ok(pauses >= 1);
  assert.deepEqual(await present(store, kept), kept, 'a blob a row refers to was removed');
  assert.equal((await store.blobs.collect(blobReferences(store.db))).removed, other.length);
  assert.deepEqual(await present(store, kept), kept);
});

test('a new reference between two slices to a hash the read has not found keeps its blob', async (t) => {
  const store = await opened(t);
  const kept = await attached(store, 'kept', 20);
  const { hash } = await store.blobs.put('about to be freed');
  const garbage = (await store.blobs.put('freed')).hash;
  const { removed, pauses } = await collectRacing(store, 2, async () => {
    await store.blobs.holding(async (put) => {
      await put('about to be freed');
      await store.db.write((tx) => insertAttachment(tx, row(hash, 'kept')));
    });
  });
  assert.ok(pauses >= 2);
  assert.equal(await store.blobs.has(hash), true, 'a blob its attachment row refers to was removed');
  assert.equal(await store.blobs.has(garbage), false);
  assert.equal(removed, 1);
  assert.deepEqual(await present(store, kept), kept);
});

test('a few candidates (an unsent upload’s expiry) are looked up a window of rows at a time: named in any column, or not at all', async (t) => {
  const store = await opened(t);
  const kept = await attached(store, 'kept', 20);
  const images = await attached(store, 'other', 6, 'image');
  await changed(store, images); // the file changes' rows name them (and the attachments' last rows)
  const nothing = (await store.blobs.put('named by nothing')).hash;
  let pauses = 0;
  const between = async () => {
    pauses += 1;
  };
  const candidates = [kept[0]!, images[5]!, nothing, kept[19]!];
  assert.deepEqual(await unreferencedHashes(store.db, candidates, { sliceRows: 1, between }), [nothing]);
  assert.ok(pauses >= 10, `read a window at a time (${pauses} pauses)`);
  await store.db.write((tx) => trashConversation(tx, 'other')); // its attachments go; then every file change
  await store.db.write((tx) => tx.run('DELETE FROM file_changes'));
  assert.deepEqual(await unreferencedHashes(store.db, candidates), [images[5]!, nothing]);
});

test('attack: collections overlapping without end (an upload’s each) still free what their own read found unreferenced', async (t) => {
  // One person's uploads from many sockets at once: each finished upload drops the person's oldest unsent one
  // and collects its bytes, so collections overlap. A blob put while another collection ran was left by every
  // collection until none ran: 32 sockets kept 444 of 960 uploads' blobs where the bound is 20.
  const store = await opened(t);
  await attached(store, 'kept', 20);
  let paused!: () => void;
  const pausing = new Promise<void>((resolve) => (paused = resolve));
  let go!: () => void;
  const gate = new Promise<void>((resolve) => (go = resolve));
  // The first collection, held between two slices of its read while the rest runs.
  const first = store.blobs.collect(
    blobReferences(store.db, {
      sliceRows: SLICE,
      between: async () => {
        paused();
        await gate;
      },
    }),
  );
  await pausing;
  // An upload put and its row written while the first runs, then dropped (no row names it any more).
  const { hash } = await store.blobs.holding(async (put) => {
    const stored = await put('an upload dropped later');
    await store.db.write((tx) => insertAttachment(tx, { ...row(stored.hash, 'kept'), conversation_id: null }));
    return stored;
  });
  await store.db.write((tx) => tx.run('DELETE FROM attachments WHERE hash = ?', [hash]));
  // A second collection, started after that put and its row: its own read finds nothing naming the blob.
  const second = await store.blobs.collect(blobReferences(store.db), [hash]);
  go();
  await first;
  assert.equal(second.removed, 1, 'the dropped upload’s bytes were left by a collection that read no row naming them');
  assert.equal(await store.blobs.has(hash), false, 'nothing else ever frees them (the full collection runs at start and after deletions)');
});
