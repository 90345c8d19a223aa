// A record that defers its sync (Database.write's `deferSync`, the turn's user message) is written on the
// loop (writeSync) when nothing else is in the journal's io chain: in the file when the write returns, its
// sync still deferred. A write refused there takes the roads of a write the pool refused: a full disk
// leaves the record owed (applied in memory, written first once there is room), anything else stops the
// journal; nothing acknowledged is lost either way.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Database } from '../../src/store/database';
import { datasyncGate } from '../helpers/datasync-gate';
import { fullDiskFake } from '../helpers/full-disk-fake';
import { loopWriteFault } from '../helpers/loop-write-fault';
import { openTable, tableValues, tempDir } from '../helpers/store-utils';
import { settledSoon } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };
const DEFER = { deferSync: true };

/** What the journal's segments hold now, read synchronously. */
function segments(dir: string): string {
  return readdirSync(dir)
    .filter((n) => /\.journal\.[0-9]+$/.test(n))
    .map((n) => readFileSync(path.join(dir, n), 'utf8'))
    .join('');
}

test('a deferred write with nothing in flight is in the file when write() returns, its sync still deferred', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('write-now-');
  t.after(cleanup);
  let db = await openTable(dir);
  t.after(() => db.close());
  const syncs = await datasyncGate(t);
  const loop = loopWriteFault(t);
  const deferred = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['now-a']), DEFER);
  assert.match(segments(dir), /now-a/, 'in the file before anything else ran');
  assert.equal(db.writtenNow, true);
  assert.equal(loop.count(), 1);
  await db.written();
  assert.equal(await settledSoon(deferred), false, 'written, not durable');
  assert.equal(syncs.count(), 0);
  // A planned one (the user message's path) too; a second in the same tick is written at once as well.
  const planned = db.writePlanned([{ sql: 'INSERT INTO t VALUES (?)', params: ['now-b'] }], [], DEFER);
  const again = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['now-c']), DEFER);
  assert.match(segments(dir), /now-b[^]*now-c/);
  // A synced write's batch in flight: a deferred one then waits for it (the pool writes it after).
  const synced = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['synced']));
  const behind = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['behind']), DEFER);
  assert.equal(db.writtenNow, false);
  await Promise.all([deferred, planned, again, synced, behind]);
  assert.equal(syncs.count(), 1, 'one fdatasync made them all durable');
  assert.equal(loop.count(), 3);
  await db.close();
  db = await openTable(dir);
  assert.deepEqual(tableValues(db), ['now-a', 'now-b', 'now-c', 'synced', 'behind']);
});

test('a loop write a full disk refuses: the record is owed (applied, not acknowledged), written first once there is room; the deferred record before it is synced', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('write-now-full-');
  t.after(cleanup);
  let db = await openTable(dir);
  t.after(() => db.close());
  const disk = await fullDiskFake(t);
  const before = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['before']), DEFER);
  disk.set('writes');
  const refused = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['refused']), DEFER);
  const written = db.written();
  await assert.rejects(refused, /disk full/);
  await assert.rejects(written!, /disk full/, 'its write is not taken for done');
  await before;
  assert.equal(db.writtenNow, false, 'owed');
  assert.deepEqual(tableValues(db), ['before', 'refused'], 'applied in memory, as a write the pool was refused is');
  assert.match((await db.problem()) ?? '', /disk full/);
  assert.doesNotMatch(segments(dir), /refused/, 'cut back to the last record written whole');
  // Once there is room, the owed record goes first.
  disk.set('none');
  await db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['after']), DEFER);
  assert.equal(await db.problem(), null);
  await db.close();
  db = await openTable(dir);
  assert.deepEqual(tableValues(db), ['before', 'refused', 'after']);
});

test('a loop write that fails otherwise (EIO) stops the journal: nothing after it is acknowledged, nothing acknowledged before it is lost', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('write-now-eio-');
  t.after(cleanup);
  let db: Database = await openTable(dir);
  t.after(() => db.close());
  const loop = loopWriteFault(t);
  await db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['kept']));
  // Its flush ends a few microtasks after its promise resolves (the io chain idle again).
  await new Promise((resolve) => setImmediate(resolve));
  const unsynced = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['unsynced']), DEFER);
  loop.set('EIO');
  const failed = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['failed']), DEFER);
  await assert.rejects(failed, /could not be written \(EIO: .*\); restart the service/);
  await assert.rejects(unsynced, /restart the service/, 'written but never synced: not acknowledged');
  await assert.rejects(
    db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['later'])),
    /restart the service/,
  );
  loop.set('none');
  assert.equal(loop.count(), 2, 'both deferred records were written on the loop');
  await db.close();
  db = await openTable(dir);
  assert.deepEqual(tableValues(db), ['kept', 'unsynced'], 'the acknowledged record is kept (and the one written before the failure is in the file)');
});
