// A deferred write (the turn's user message, agent/user-commit.ts) and a full disk: its record is in the
// file, so a sync, which needs no new space, makes it durable even when a later write is refused (its
// turn would wait for ever otherwise); and a record once written is never cut off again, even when its
// own sync fails (the model may already have been asked about it: a resend after a kill would run its
// turn twice).
import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Database } from '../../src/store/database';
import { fullDiskFake } from '../helpers/full-disk-fake';
import { openTable, tableValues, tempDir } from '../helpers/store-utils';
import { settledSoon } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };
const DEFER = { deferSync: true };

/** The data directory as a process killed now would leave it, opened. */
async function afterKill(t: { after: (fn: () => Promise<void>) => void }, dir: string): Promise<Database> {
  const copy = await tempDir('deferred-full-copy-');
  t.after(copy.cleanup);
  const target = path.join(copy.dir, 'data');
  await cp(dir, target, { recursive: true });
  const db = await Database.open(target);
  t.after(() => db.close());
  return db;
}

test('a deferred write is made durable when a later write finds the disk full (a sync needs no new space), not left waiting', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('deferred-full-');
  t.after(cleanup);
  const db = await openTable(dir);
  t.after(() => db.close());
  const disk = await fullDiskFake(t);

  const user = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['user']), DEFER);
  await db.written();
  disk.set('writes');
  const reply = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['reply']));
  await assert.rejects(reply, /disk full/);
  assert.equal(await settledSoon(user), true, 'the written record got its sync when the next write was refused');
  await user;
  await assert.rejects(db.flush(), /disk full/, 'the refused record is still owed');

  disk.set('none');
  await db.flush();
  assert.deepEqual(tableValues(await afterKill(t, dir)), ['user', 'reply']);
});

test('a written record whose own fdatasync fails is not cut off: the journal stops, the record stays in the file', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('deferred-full-');
  t.after(cleanup);
  const db = await openTable(dir);
  t.after(() => db.close());
  const disk = await fullDiskFake(t);

  disk.set('syncs');
  // Asked for a sync in its own tick: the batch writes, its written() resolves (the model is asked), then its sync fails.
  const user = db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['user']), DEFER);
  const written = db.written();
  const flushed = db.flush();
  // Looked at below, once the directory is copied.
  user.catch(() => undefined);
  await written;
  await assert.rejects(flushed);
  assert.deepEqual(tableValues(await afterKill(t, dir)), ['user'], 'a killed process leaves the written record for the resend to find');
  // Whether it reached the disk is unknown: it is not acknowledged, and neither is anything after it.
  await assert.rejects(user, /restart the service/);
  await assert.rejects(
    db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['later'])),
    /restart the service/,
  );
});
