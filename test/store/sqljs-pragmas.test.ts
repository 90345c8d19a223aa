// The main thread's sql.js database lives in sql.js's emulated in-memory file: its lock is kept between
// statements (keepLock) and its commits do not sync that file (skipSyncs), which would make nothing durable
// (the journal's fdatasync does) and only cost calls at every commit. A live store's and a scratch one's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Database } from '../../src/store/database';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 30_000 };

test("sql.js's in-memory file: the lock kept, commits not synced (a store's and a scratch database's)", LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('sqljs-pragmas-');
  t.after(cleanup);
  const db = await Database.open(dir);
  t.after(() => db.close());
  const scratch = await Database.scratch('CREATE TABLE t (v TEXT)');
  t.after(() => scratch.close());
  for (const d of [db, scratch]) {
    assert.equal(d.get<{ synchronous: number }>('PRAGMA synchronous')?.synchronous, 0);
    assert.equal(d.get<{ locking_mode: string }>('PRAGMA locking_mode')?.locking_mode, 'exclusive');
  }
});
