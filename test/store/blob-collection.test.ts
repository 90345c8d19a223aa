// The blob collection (s33, blobs33): a blob no row refers to any more is freed, never one a put is
// about to record (held by `holding` until its row is written, or put while a collection runs), and a
// kill -9 between the rows' deletion and the files' removal loses nothing still referred to: the next
// open's first maintenance pass frees what is left.
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { BlobGuard, type BlobReferences } from '../../src/store/blob-guard';
import { BLOBS_DIR_NAME, BlobStore, COLLECT_FAULT_ENV, hashBytes } from '../../src/store/blob-store';
import { openStore } from '../../src/store/index';
import { COLLECT_BYTES, spawnStoreChild, tempDir } from '../helpers/store-utils';

/** Rows as a set of the hashes they refer to; `durable` waits for `gate` when one is set. */
function rowsOf(rows: Set<string>, gate?: Promise<void>): BlobReferences & { reads: number } {
  const refs = {
    reads: 0,
    unreferenced: async (hashes: readonly string[]) => {
      refs.reads += 1;
      return hashes.filter((h) => !rows.has(h));
    },
    durable: () => gate ?? Promise.resolve(),
  };
  return refs;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

test('a blob no row refers to is freed, one a row refers to stays', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const blobs = await BlobStore.open(dir);
  const kept = await blobs.put('referred to');
  const garbage = await blobs.put('referred to by nothing');
  assert.deepEqual(await blobs.collect(rowsOf(new Set([kept.hash]))), { removed: 1, bytes: garbage.size });
  assert.equal(await blobs.has(garbage.hash), false);
  assert.equal((await blobs.get(kept.hash))?.toString(), 'referred to');
});

test('a put held until its row is written is not taken by a collection meanwhile (an upload’s end, a turn’s file write)', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const blobs = await BlobStore.open(dir);
  const rows = new Set<string>();
  // The bytes are already there, referred to by nothing (a deleted conversation's): the put returns at once.
  const { hash } = await blobs.put('bytes stored again');
  const putDone = deferred();
  const rowMayGo = deferred();
  const holding = blobs.holding(async (put) => {
    await put('bytes stored again');
    putDone.resolve();
    await rowMayGo.promise;
    rows.add(hash); // its row, written after the collection
  });
  await putDone.promise;
  assert.deepEqual(await blobs.collect(rowsOf(rows)), { removed: 0, bytes: 0 });
  rowMayGo.resolve();
  await holding;
  assert.equal(await blobs.has(hash), true, 'a row refers to a blob the collection removed');
  // Once written, its row keeps it; without a row (the step ended without one), the next collection frees it.
  assert.deepEqual(await blobs.collect(rowsOf(rows)), { removed: 0, bytes: 0 });
  rows.delete(hash);
  assert.equal((await blobs.collect(rowsOf(rows))).removed, 1);
});

test('a put made after a collection read the rows is not taken by it, even when its row is written before the removal', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const blobs = await BlobStore.open(dir);
  const rows = new Set<string>();
  const { hash } = await blobs.put('wanted again');
  const other = await blobs.put('garbage');
  const gate = deferred();
  const refs = rowsOf(rows, gate.promise);
  const collecting = blobs.collect(refs);
  // The collection has read the rows (nothing refers to either) and waits for their durability.
  while (refs.reads === 0) await new Promise((resolve) => setImmediate(resolve));
  await blobs.holding(async (put) => {
    await put('wanted again');
    rows.add(hash);
  });
  gate.resolve();
  assert.deepEqual(await collecting, { removed: 1, bytes: other.size });
  assert.equal(await blobs.has(hash), true, 'a row refers to a blob the collection removed');
  assert.equal(await blobs.has(other.hash), false);
});

test('while a backup copies (withoutRemovals), a collection removes nothing and says it left them; the next one removes them', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const blobs = await BlobStore.open(dir);
  const garbage = await blobs.put('a deleted conversation’s bytes, named by the backup’s snapshot');
  const during = await blobs.withoutRemovals(() => blobs.collect(rowsOf(new Set())));
  assert.deepEqual(during, { removed: 0, bytes: 0, deferred: true });
  assert.equal(await blobs.has(garbage.hash), true, 'a blob the backup is to copy was removed');
  assert.deepEqual(await blobs.collect(rowsOf(new Set())), { removed: 1, bytes: garbage.size });
});

test('a put of bytes being removed waits for the removal, then stores them anew', async () => {
  const guard = new BlobGuard();
  const files = new Map<string, string>([['h', 'bytes']]);
  const unlinking = deferred();
  const unlinked = deferred();
  const collecting = guard.collect(['h'], rowsOf(new Set()), async (hash) => {
    unlinking.resolve();
    await unlinked.promise;
    files.delete(hash);
    return 5;
  });
  await unlinking.promise;
  // A put as BlobStore's: touched, then after any removal in flight, written when absent.
  const putting = (async () => {
    guard.touched('h');
    await guard.removing('h');
    if (!files.has('h')) files.set('h', 'bytes');
  })();
  unlinked.resolve();
  await Promise.all([collecting, putting]);
  assert.equal(files.get('h'), 'bytes', 'the put answered before the removal it raced');
});

const blobFile = (dir: string, text: string) => {
  const hash = hashBytes(Buffer.from(text));
  return path.join(dir, BLOBS_DIR_NAME, hash.slice(0, 2), hash);
};
const present = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );

for (const point of ['before-remove', 'after-remove'] as const) {
  test(`kill -9 ${point === 'before-remove' ? 'between the rows’ deletion and the first file’s removal' : 'after the first file’s removal'}: nothing referred to is lost, the next open frees the rest`, async (t) => {
    const { dir, cleanup } = await tempDir();
    t.after(cleanup);
    const child = spawnStoreChild('collect', dir, { [COLLECT_FAULT_ENV]: point });
    t.after(() => child.proc.kill('SIGKILL'));
    const { signal } = await child.exited;
    assert.equal(signal, 'SIGKILL', `the child ended otherwise: ${child.stderr()} ${child.lines.join('|')}`);
    assert.ok(child.lines.includes('deleted') && !child.lines.includes('collected'), child.lines.join('|'));
    const goneLeft = await Promise.all(COLLECT_BYTES.gone.map((text) => present(blobFile(dir, text))));
    if (point === 'before-remove') assert.deepEqual(goneLeft, [true, true], 'killed before any removal');
    else assert.equal(goneLeft.filter(Boolean).length, 1, 'killed after one removal');

    const store = await openStore(dir);
    try {
      assert.equal(store.conversations.get('gone'), undefined, 'the deletion stands');
      assert.equal(store.attachments.get('gone-a'), undefined, 'its attachment’s row went with it (replayed)');
      const kept = store.attachments.get('kept-a');
      assert.ok(kept);
      assert.equal((await store.blobs.get(kept.hash))?.toString(), 'kept attachment');
      for (const row of store.fileChanges.ofTurn('kept', 't')) {
        for (const hash of [row.before_hash, row.after_hash]) assert.ok(hash && (await store.blobs.get(hash)), 'a kept turn’s image is lost');
      }
      await store.maintenance.run();
      for (const text of COLLECT_BYTES.gone) assert.equal(await present(blobFile(dir, text)), false, `"${text}" is left after the next open's pass`);
      for (const text of [...COLLECT_BYTES.kept, ...COLLECT_BYTES.shared]) assert.equal(await present(blobFile(dir, text)), true, `"${text}" is lost`);
    } finally {
      await store.close();
    }
  });
}
