// A write made with `deferSync` (Database.write; the turn's user message, agent/user-commit.ts) is written
// at once but not fdatasynced for its own sake: the next fdatasync of the journal, whoever's, makes it
// durable, and `flush()` asks for one. A segment is synced before it is closed, and close syncs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { datasyncGate } from '../helpers/datasync-gate';
import { openTable, tableValues, tempDir } from '../helpers/store-utils';
import { settledSoon } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };
const DEFER = { deferSync: true };

test('a deferred write waits for the next fdatasync: a later write, or flush(), makes it durable with one sync', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('deferred-sync-');
  t.after(cleanup);
  let db = await openTable(dir);
  t.after(() => db.close());
  const syncs = await datasyncGate(t);

  const deferred = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['a']), DEFER);
  await db.written();
  assert.equal(await settledSoon(deferred), false, 'written, not durable, nobody asked');
  assert.equal(syncs.count(), 0);
  await db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['b']));
  await deferred;
  assert.equal(syncs.count(), 1, 'the later write\u2019s one fdatasync covers both');

  const second = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['c']), DEFER);
  const third = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['d']), DEFER);
  await db.written();
  assert.equal(await settledSoon(Promise.race([second, third])), false);
  await db.flush();
  await Promise.all([second, third]);
  assert.equal(syncs.count(), 2, 'flush() asks for one sync for every written record');

  // Asked while the batch is still gathering: its own flush syncs.
  const fourth = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['e']), DEFER);
  await db.flush();
  await fourth;
  assert.equal(syncs.count(), 3);

  // Close syncs what is only written.
  void db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['f']), DEFER);
  await db.written();
  await db.close();
  assert.equal(syncs.count(), 4);
  db = await openTable(dir);
  assert.deepEqual(tableValues(db), ['a', 'b', 'c', 'd', 'e', 'f']);
});

test('a full segment holding a deferred record is synced before it is closed and compacted', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('deferred-sync-');
  t.after(cleanup);
  let db = await openTable(dir, 256);
  t.after(() => db.close());
  const syncs = await datasyncGate(t);
  const deferred = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['x'.repeat(300)]), DEFER);
  await db.written();
  assert.equal(await settledSoon(deferred), false, 'written, not durable');
  assert.equal(db.stats().segments, 1, 'a segment past its size is not closed while a record in it waits for its sync');
  await db.compact();
  await deferred;
  assert.ok(syncs.count() >= 1);
  await db.close();
  db = await openTable(dir, 256);
  assert.deepEqual(tableValues(db), ['x'.repeat(300)]);
});
