// A read path runs reads only: Database.get/all and a write's tx.get/all refuse a statement that would
// change the database (an INSERT/UPDATE/DELETE ... RETURNING gives rows like a read). Run there, its change
// would have no journal record (lost at a restart) and pass no read memo's watch (stale cached reads).
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { Database } from '../../src/store/database';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 30_000 };

const WRITES = [
  "INSERT INTO t (v) VALUES ('x') RETURNING v",
  "UPDATE t SET v = 'changed' RETURNING v",
  'DELETE FROM t RETURNING v',
  "WITH n AS (SELECT 'y' AS v) INSERT INTO t (v) SELECT v FROM n RETURNING v",
  "REPLACE INTO t (v) VALUES ('z') RETURNING v",
  'PRAGMA user_version = 7',
  'PRAGMA foreign_keys = ON',
  // Sets and also returns a row (review20b).
  'PRAGMA max_page_count = 10',
  // The function form that sets (fix21a): the same pragmas given their value in parentheses.
  'PRAGMA max_page_count(10)',
  'PRAGMA main.max_page_count(10)',
  'PRAGMA user_version(3)',
  'PRAGMA main.user_version(3)',
  'PRAGMA "user_version"(3)',
  'PRAGMA cache_size(10)',
  'PRAGMA locking_mode(NORMAL)',
  'PRAGMA journal_mode(DELETE)',
  // Applied as it is prepared (cache_size): refused before anything prepares it.
  'PRAGMA cache_size = 20',
  '/* lead */ PRAGMA cache_size(30)',
  'EXPLAIN PRAGMA cache_size(40)',
  // Empty statements first: sql.js prepares the pragma after them (review21b).
  ' ;PRAGMA cache_size = 50',
  " ;INSERT INTO t (v) VALUES ('w') RETURNING v",
  ';; /* c */ ; PRAGMA cache_size(60)',
  'BEGIN',
  'COMMIT',
  'SAVEPOINT s',
  'CREATE TABLE u (x)',
];

/** A store's database in a temp directory with a table `t`, closed and removed when `t` ends. */
async function openWithTable(t: TestContext, prefix: string): Promise<Database> {
  const { dir, cleanup } = await tempDir(prefix);
  t.after(cleanup);
  const db = await Database.open(dir);
  t.after(() => db.close());
  await db.write((tx) => void tx.run('CREATE TABLE t (v TEXT)'));
  return db;
}

function refusal(sql: string): (err: unknown) => boolean {
  return (err) => err instanceof Error && err.message.includes('not read-only') && err.message.includes(sql);
}

test('Database.get/all refuse a statement that writes, naming it; the database is unchanged', LIMIT, async (t) => {
  const db = await openWithTable(t, 'read-only-reads-');
  await db.write((tx) => void tx.run('INSERT INTO t (v) VALUES (?)', ['kept']));
  const version = db.get<{ user_version: number }>('PRAGMA user_version')?.user_version;
  const settings = (): unknown[] => ['max_page_count', 'cache_size', 'locking_mode', 'journal_mode'].map((p) => db.get(`PRAGMA ${p}`));
  const before = settings();
  for (const sql of WRITES) {
    assert.throws(() => db.get(sql), refusal(sql), `get: ${sql}`);
    assert.throws(() => db.all(sql), refusal(sql), `all: ${sql}`);
  }
  assert.deepEqual(db.all('SELECT v FROM t'), [{ v: 'kept' }]);
  assert.equal(db.get<{ user_version: number }>('PRAGMA user_version')?.user_version, version);
  assert.deepEqual(settings(), before, 'no setting changed');
  assert.equal(db.get('SELECT 1 AS present FROM sqlite_master WHERE name = ?', ['u']), undefined);
  // Still a write's statement: the text refused as a read runs as a write (one statement cache).
  await db.write((tx) => void tx.run("UPDATE t SET v = 'changed' RETURNING v"));
  assert.deepEqual(db.all('SELECT v FROM t'), [{ v: 'changed' }]);
  assert.throws(() => db.get("UPDATE t SET v = 'changed' RETURNING v"), refusal("UPDATE t SET v = 'changed' RETURNING v"));
});

test("a write's tx.get/all refuse a statement that writes (it would be applied without its record)", LIMIT, async (t) => {
  const db = await openWithTable(t, 'read-only-reads-tx-');
  const sql = "INSERT INTO t (v) VALUES ('x') RETURNING v";
  await assert.rejects(
    db.write((tx) => {
      tx.run('INSERT INTO t (v) VALUES (?)', ['a']);
      tx.get(sql);
    }),
    refusal(sql),
  );
  await assert.rejects(
    db.write((tx) => void tx.all(sql)),
    refusal(sql),
  );
  assert.deepEqual(db.all('SELECT v FROM t'), []);
});

test('reads still run: SELECT, WITH ... SELECT, VALUES, PRAGMA reads, through get, all and tx', LIMIT, async (t) => {
  const db = await openWithTable(t, 'read-only-reads-ok-');
  await db.write((tx) => void tx.run('INSERT INTO t (v) VALUES (?)', ['a']));
  assert.deepEqual(db.get('SELECT v FROM t WHERE v = ?', ['a']), { v: 'a' });
  assert.deepEqual(db.all('WITH n AS (SELECT v FROM t) SELECT v FROM n'), [{ v: 'a' }]);
  assert.deepEqual(db.all('VALUES (1)'), [{ column1: 1 }]);
  assert.equal(typeof db.get<{ page_count: number }>('PRAGMA page_count')?.page_count, 'number');
  assert.deepEqual(
    db.all<{ name: string }>('PRAGMA table_info(t)').map((c) => c.name),
    ['v'],
  );
  // The function form that reads: its argument names what to read, not a value to set.
  assert.deepEqual(
    db.all<{ name: string }>('PRAGMA main.table_xinfo("t")').map((c) => c.name),
    ['v'],
  );
  assert.deepEqual(db.all('PRAGMA quick_check(1)'), [{ quick_check: 'ok' }]);
  assert.equal(db.get<{ locking_mode: string }>('PRAGMA locking_mode')?.locking_mode, 'exclusive');
  const inTx = await db.write((tx) => tx.get<{ v: string }>('SELECT v FROM t')?.v);
  assert.equal(inTx, 'a');
});
