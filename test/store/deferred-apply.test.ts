// A planned write's statements are applied behind its record (s20, turn20a: Database.writePlanned): once the
// fdatasync that covers the record is asked, or before anything else reads or writes sql.js (the barrier),
// whichever comes first. Every reader and writer arriving between the record's hand-off and that apply sees
// and does what it did when the statements ran at once; a message's seq is given before its INSERT runs
// (MessagesRepo.nextSeq), and replay makes the same rows, of records written before s20 too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Database } from '../../src/store/database';
import { openStore } from '../../src/store/index';
import type { Store } from '../../src/store/index';
import { names, ReadMemo } from '../../src/store/read-memo';
import type { NewMessage } from '../../src/store/types';
import { datasyncGate } from '../helpers/datasync-gate';
import { openTable, tableValues, tempDir } from '../helpers/store-utils';

const LIMIT = { timeout: 60_000 };
const iso = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
const INSERT_T = 'INSERT INTO t (v) VALUES (?)';
/** As a turn stores its user message: planned, its sync deferred (agent/user-commit.ts). */
const DEFER = { deferSync: true };

async function opened(t: { after: (fn: () => Promise<void>) => void }): Promise<{ store: Store; dir: string }> {
  const { dir, cleanup } = await tempDir('deferred-apply-');
  const store = await openStore(dir);
  t.after(async () => {
    await store.close().catch(() => undefined);
    await cleanup();
  });
  await store.conversations.create({ id: 'c1', title: 't', source: 'lan', created_at: iso(0) });
  await store.messages.append({ id: 'm0', conversation_id: 'c1', role: 'user', content: 'zero', timestamp: iso(1) });
  return { store, dir };
}

const message = (id: string, n: number, extra: Partial<NewMessage> = {}): NewMessage => ({ id, conversation_id: 'c1', role: 'user', content: `text ${id}`, timestamp: iso(n), ...extra });

/** Every message row as sql.js holds it, in seq order. */
function rows(store: Store): unknown[] {
  return store.db.all('SELECT seq, id, conversation_id, role, content, timestamp, body_key, client_key FROM messages ORDER BY seq');
}

test('a planned write waits behind its record: applied once an fdatasync is asked, not before (a deferred sync waits for the next)', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('deferred-apply-');
  t.after(cleanup);
  const db = await openTable(dir);
  t.after(() => db.close());
  const syncs = await datasyncGate(t);
  // Its statement is prepared when it first runs: the cache says whether it ran, without a read (a read applies it).
  const ran = () => db.statementTexts().includes(INSERT_T);
  const deferred = db.writePlanned([{ sql: INSERT_T, params: ['a'] }], [], DEFER);
  assert.equal(ran(), false, 'not applied in the hand-off block');
  await db.written();
  assert.equal(ran(), false, 'written, its sync deferred: still waiting');
  syncs.hold();
  const flushed = db.flush();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(ran(), true, 'applied once the fdatasync is asked, while it is held');
  syncs.release();
  await Promise.all([deferred, flushed]);
  assert.deepEqual(tableValues(db), ['a']);
});

test('every read and write of sql.js after a planned hand-off sees its statements applied (the barrier)', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('deferred-apply-');
  t.after(cleanup);
  const db = await openTable(dir);
  t.after(() => db.close());
  const plan = (v: string) => db.writePlanned([{ sql: INSERT_T, params: [v] }], [], DEFER);
  const writes = [plan('a')];
  assert.deepEqual(
    db.all<{ v: string }>('SELECT v FROM t').map((r) => r.v),
    ['a'],
    'all',
  );
  writes.push(plan('b'));
  assert.equal(db.get<{ n: number }>('SELECT count(*) AS n FROM t')?.n, 2, 'get');
  writes.push(plan('c'));
  // A write applies what waits first (record order is apply order), and its tx reads see it.
  const seen = await db.write((tx) => {
    const n = tx.get<{ n: number }>('SELECT count(*) AS n FROM t')?.n;
    tx.run(INSERT_T, ['d']);
    return n;
  });
  assert.equal(seen, 3, "a write's tx reads see what waited");
  writes.push(plan('e'));
  // A second planned write applies after the first, in record order.
  writes.push(plan('f'));
  // Deferred, they wait for the next fdatasync: asked here.
  await Promise.all([...writes, db.flush()]);
  assert.deepEqual(tableValues(db), ['a', 'b', 'c', 'd', 'e', 'f']);
  writes.push(plan('g'));
  await db.close();
  await Promise.all(writes);
  const again = await Database.open(dir);
  t.after(() => again.close());
  assert.deepEqual(tableValues(again), ['a', 'b', 'c', 'd', 'e', 'f', 'g'], 'replay gives what the live store held; close applied what waited');
});

test('a read memo sees a planned statement when it is journaled: a read after it is not answered from memory', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('deferred-apply-');
  t.after(cleanup);
  const db = await openTable(dir);
  t.after(() => db.close());
  const memo = new ReadMemo(db, names('t'), () => db.all('SELECT v FROM t').length);
  assert.equal(memo.get('k'), 0);
  const durable = db.writePlanned([{ sql: INSERT_T, params: ['a'] }], [], DEFER);
  assert.equal(memo.get('k'), 1, 'read again, through the barrier');
  await Promise.all([durable, db.flush()]);
});

test('readers between a message append and its apply see it: get_messages, get, list, counts, client keys, seqOf', LIMIT, async (t) => {
  const { store } = await opened(t);
  const m = message('m1', 5, { client_key: 'person\u0000k1' });
  const appended = store.messages.appendMany([m], undefined, DEFER);
  assert.deepEqual(
    (await store.messages.recent('c1')).map((r) => r.id),
    ['m0', 'm1'],
    'recent (get_messages)',
  );
  const appended2 = store.messages.appendMany([message('m2', 6)], undefined, DEFER);
  assert.equal((await store.messages.get('m2'))?.content, 'text m2', 'get');
  const appended3 = store.messages.appendMany([message('m3', 7)], undefined, DEFER);
  assert.equal(store.conversations.list({ limit: 10 })[0]?.updated_at, iso(7), 'list shows its activity');
  const appended4 = store.messages.appendMany([message('m4', 8)], undefined, DEFER);
  assert.equal(store.messages.count('c1'), 5, 'count');
  const appended5 = store.messages.appendMany([message('m5', 9, { client_key: 'person\u0000k5' })], undefined, DEFER);
  assert.equal(store.messages.hasClientKey('person\u0000k5'), true, 'its client key (a resend decided at once)');
  const appended6 = store.messages.appendMany([message('m6', 10)], undefined, DEFER);
  const after = await store.messages.after('c1', 0);
  assert.deepEqual(
    after.map((r) => r.id),
    ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6'],
    'after (export)',
  );
  for (const r of after) assert.equal(store.messages.seqOf(r.id), r.seq, `seqOf ${r.id} is its row's seq`);
  await Promise.all([appended, appended2, appended3, appended4, appended5, appended6, store.db.flush()]);
});

test("a delete_conversation or another client's write between a message's hand-off and its apply does what it did", LIMIT, async (t) => {
  const { store, dir } = await opened(t);
  const appended = store.messages.appendMany([message('m1', 5)], undefined, DEFER);
  // Another client's write: its transaction reads the message stored before it.
  const counted = await store.db.write((tx) => tx.get<{ n: number }>("SELECT count(*) AS n FROM messages WHERE conversation_id = 'c1'")?.n);
  assert.equal(counted, 2);
  const appended2 = store.messages.appendMany([message('m2', 6)], undefined, DEFER);
  assert.equal(await store.conversations.delete('c1'), true, 'deleted with the message that came before');
  await Promise.all([appended, appended2]);
  assert.deepEqual(rows(store), []);
  await assert.rejects(store.messages.append(message('m3', 7)), /conversation c1 not found/);
  await store.close();
  const again = await openStore(dir);
  t.after(() => again.close());
  assert.deepEqual(rows(again), [], 'replay gives the same: the messages went with their conversation');
  assert.equal(again.conversations.get('c1'), undefined);
});

test('a resent client key is refused before its hand-off (its INSERT would fail behind its record, after the model was asked)', LIMIT, async (t) => {
  const { store } = await opened(t);
  const first = store.messages.appendMany([message('m1', 5, { client_key: 'person\u0000k' })], undefined, DEFER);
  const before = store.db.lastWrite;
  await assert.rejects(store.messages.appendMany([message('m2', 6, { client_key: 'person\u0000k' })], undefined, DEFER), /UNIQUE constraint failed: messages.client_key/);
  assert.equal(store.db.lastWrite, before, 'nothing journaled');
  await Promise.all([first, store.db.flush()]);
});

test("messages' seqs are given before their statements run, and replayed alike, after records written before s20 (no seq bound)", LIMIT, async (t) => {
  const { store, dir } = await opened(t);
  // As builds before s20 wrote them: AUTOINCREMENT chose the seq (s19 asked it back with RETURNING).
  const old = 'INSERT INTO messages (id, conversation_id, role, content, timestamp, tool_name, user_id, data, client_key, body_key, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
  await store.db.write((tx) => tx.run(old, ['o1', 'c1', 'user', 'old one', iso(2), null, null, null, null, null, 7]));
  await store.db.write((tx) => tx.run(`${old} RETURNING seq`, ['o2', 'c1', 'user', 'old two', iso(3), null, null, null, null, null, 7]));
  const appended = store.messages.appendMany([message('m1', 5)], undefined, DEFER);
  const seq = store.messages.seqOf('m1');
  await store.messages.append(message('m2', 6));
  // A message refused before its hand-off took a seq: a gap, as AUTOINCREMENT allows.
  await assert.rejects(store.messages.append({ ...message('m3', 7), conversation_id: 'nowhere' }), /not found/);
  await store.messages.append(message('m4', 8));
  await appended; // covered by the appends' fdatasyncs since
  const live = rows(store);
  assert.deepEqual(
    live.map((r) => (r as { id: string }).id),
    ['m0', 'o1', 'o2', 'm1', 'm2', 'm4'],
  );
  const seqs = live.map((r) => (r as { seq: number }).seq);
  assert.equal(seqs[3], seq, 'the seq given before the INSERT ran is its row');
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
  );
  await store.close();
  const again = await openStore(dir);
  t.after(() => again.close());
  assert.deepEqual(rows(again), live, 'replay makes the same rows');
  await again.messages.append(message('m5', 9));
  assert.equal((rows(again).at(-1) as { seq: number }).seq, seqs.at(-1)! + 1);
});

test('a row inserted by another statement than a message append (a test, a future migration) moves the next seq past it', LIMIT, async (t) => {
  const { store } = await opened(t);
  await store.db.write((tx) => tx.run('INSERT INTO messages (seq, id, conversation_id, role, content, timestamp, bytes) VALUES (?, ?, ?, ?, ?, ?, ?)', [100, 'x', 'c1', 'user', 'x', iso(2), 1]));
  await store.messages.append(message('m1', 5));
  assert.equal(store.messages.seqOf('m1'), 101);
  assert.equal((rows(store).at(-1) as { seq: number }).seq, 101);
});
