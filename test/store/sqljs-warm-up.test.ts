// sql.js's warm-up (store/sqljs-warm-up.ts): the open's statements run on a throwaway database in memory
// while a start waits for its files, one a turn of the event loop, so the thread's other work (a file's
// callback) waits for one statement at most; the open ends it where its own statements begin.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { test } from 'node:test';
import { Database } from '../../src/store/index';
import { SCHEMA_SQL } from '../../src/store/schema';
import { endSqlJsWarmUp, warmSqlJs } from '../../src/store/sqljs-warm-up';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 30_000 };

/** Turns of the event loop's check phase (setImmediate) until `done` settles. */
async function turnsUntil(done: Promise<unknown>): Promise<number> {
  let settled = false;
  void done.finally(() => (settled = true));
  let turns = 0;
  while (!settled) {
    await new Promise((resolve) => setImmediate(resolve));
    turns += 1;
  }
  return turns;
}

test('the warm-up runs whole, a statement a turn of the event loop (the loop is never held for the schema)', LIMIT, async () => {
  const statements = SCHEMA_SQL.split(';').filter((s) => s.trim() !== '').length;
  const done = warmSqlJs();
  // A second call while it runs is the same warm-up.
  assert.equal(warmSqlJs(), done);
  const turns = await turnsUntil(done);
  assert.equal(await done, true);
  // Our turns ran between its statements: at least one for each of the schema's.
  assert.ok(turns >= statements, `${turns} turns of ours for ${statements} statements of the schema`);
});

test('ended, the warm-up stops at the statement under way; a later one starts afresh', LIMIT, async () => {
  const first = warmSqlJs();
  await new Promise((resolve) => setImmediate(resolve));
  endSqlJsWarmUp();
  assert.equal(await first, false);
  const second = warmSqlJs();
  assert.notEqual(second, first);
  assert.equal(await second, true);
});

test("the warm-up writes nothing of a data directory, and is settled once a store's open returns (ended by it, or over before)", LIMIT, async (t) => {
  const temp = await tempDir('ra-sqljs-warm-');
  t.after(temp.cleanup);
  const warming = warmSqlJs();
  const db = await Database.open(temp.dir);
  try {
    // Whether it was over before the open's own statements or ended by them, it is settled by then.
    const state = await Promise.race([warming.then(() => 'settled'), new Promise((resolve) => setImmediate(() => resolve('running')))]);
    assert.equal(state, 'settled');
    assert.deepEqual((await readdir(temp.dir)).filter((name) => !name.startsWith('service.db')).sort(), ['service.lock']);
  } finally {
    await db.close();
  }
});
