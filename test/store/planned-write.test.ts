// A write whose statements are known before they run (Database.writePlanned; a message append without
// more in its transaction: the turn's reply) hands its record to the journal's file first and applies
// its statements after, in the same synchronous block. A statement or check that fails after the
// hand-off rolls the live store back and voids the record (a void record, which replay skips): the
// journal replayed, at the next open or by the compaction worker, gives what the live store holds.
import assert from 'node:assert/strict';
import { open, readdir, readFile, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { openStore, usageOp } from '../../src/store/index';
import type { Store } from '../../src/store/index';
import { datasyncGate } from '../helpers/datasync-gate';
import { openTable, tableValues, tempDir } from '../helpers/store-utils';
import { settledSoon } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };
const iso = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();

/** The journal's lines (records) of every segment, in order. */
async function journalLines(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => /\.journal\.[0-9]+$/.test(n)).sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
  const lines: string[] = [];
  for (const name of names) lines.push(...(await readFile(path.join(dir, name), 'utf8')).split('\n').filter((l) => l.length > 0));
  return lines;
}

/** Cuts the journal's last segment back to its first `keep` lines: what a process killed after they were written leaves. */
async function cutJournal(dir: string, keep: number): Promise<void> {
  const names = (await readdir(dir)).filter((n) => /\.journal\.[0-9]+$/.test(n)).sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
  const last = path.join(dir, names[names.length - 1]);
  const lines = (await readFile(last, 'utf8')).split('\n').filter((l) => l.length > 0);
  await writeFile(
    last,
    lines
      .slice(0, keep)
      .map((l) => `${l}\n`)
      .join(''),
  );
}

/**
 * Calls `seen` with every buffer a FileHandle is asked to write (the journal's segments are written through
 * FileHandle.write), before the write runs; `refuse` makes that write fail as a full disk does. Returns the restore.
 */
async function onJournalWrite(seen: (data: Buffer) => void, refuse: (data: Buffer) => boolean = () => false): Promise<() => void> {
  const probe = await open(__filename, 'r');
  const proto = Object.getPrototypeOf(probe) as { write: (this: FileHandle, ...args: unknown[]) => Promise<unknown> };
  await probe.close();
  const { write } = proto;
  proto.write = async function (this: FileHandle, ...args: unknown[]) {
    const data = args[0];
    if (Buffer.isBuffer(data)) {
      seen(data);
      if (refuse(data)) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    }
    return write.apply(this, args);
  };
  return () => {
    proto.write = write;
  };
}

function messageIds(store: Store): string[] {
  return store.db.all<{ id: string }>('SELECT id FROM messages ORDER BY seq').map((r) => r.id);
}

function conversationRow(store: Store): unknown {
  return store.db.get('SELECT id, updated_at, bytes, last_message FROM conversations WHERE id = ?', ['c1']);
}

test('a planned write resolves once durable, its record in the file before its statements ran', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('planned-write-');
  t.after(cleanup);
  let db = await openTable(dir);
  t.after(() => db.close());
  const syncs = await datasyncGate(t);
  syncs.hold();
  // What the table held when each journal write reached the file handle (review17a: without this the test
  // passed with Database.write in writePlanned's place).
  const seen: string[][] = [];
  const restore = await onJournalWrite((data) => {
    if (data.includes('INSERT INTO t')) seen.push(tableValues(db));
  });
  t.after(restore);
  const before = db.lastWrite;
  const durable = db.writePlanned([{ sql: 'INSERT INTO t VALUES (?)', params: ['a'] }], []);
  assert.deepEqual(seen, [[]], 'its record handed to the file before its statement ran');
  assert.equal(db.lastWrite, before + 1);
  assert.deepEqual(tableValues(db), ['a'], 'applied in the same synchronous block');
  await db.written();
  assert.equal(await settledSoon(durable), false, 'not resolved while its fdatasync is held');
  syncs.release();
  await durable;
  await db.close();
  db = await openTable(dir);
  assert.deepEqual(tableValues(db), ['a']);
});

test('a planned write whose check fails after the hand-off is rolled back live and voided in the journal: reopen and compaction agree', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('planned-write-');
  t.after(cleanup);
  let db = await openTable(dir);
  t.after(() => db.close());
  await db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['kept']));
  const refused = db.writePlanned(
    [
      { sql: 'INSERT INTO t VALUES (?)', params: ['gone'] },
      {
        sql: 'UPDATE t SET v = v WHERE v = ?',
        params: ['nobody'],
        check: (changes) => {
          if (changes === 0) throw new Error('nothing to update');
        },
      },
    ],
    [],
  );
  assert.deepEqual(tableValues(db), ['kept'], 'rolled back at once');
  await assert.rejects(refused, /nothing to update/);
  // In the journal: the record, then a void record naming its seq (review17a: the test passed without either).
  const lines = (await journalLines(dir)).map((l) => JSON.parse(l.slice(9)) as { seq: number; v?: number; ops: unknown[] });
  const record = lines.find((l) => JSON.stringify(l.ops).includes('gone'));
  assert.ok(record, 'the record was handed to the file');
  assert.deepEqual(lines.at(-1), { seq: record.seq + 1, ops: [], v: record.seq }, 'its void record follows it');
  await db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['after']));
  assert.deepEqual(tableValues(db), ['kept', 'after']);
  await db.close();

  db = await openTable(dir);
  assert.deepEqual(tableValues(db), ['kept', 'after'], 'the journal replayed at open skips the voided record');
  await db.compact();
  await db.close();
  db = await openTable(dir);
  assert.deepEqual(tableValues(db), ['kept', 'after'], 'the compaction worker skips it too');
});

test('a planned write that fails on a constraint after the hand-off: rolled back, voided, replayed alike', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('planned-write-');
  t.after(cleanup);
  let db = await openTable(dir);
  t.after(() => db.close());
  await db.write((tx) => tx.run('CREATE TABLE u (k TEXT PRIMARY KEY)'));
  await db.writePlanned([{ sql: 'INSERT INTO u VALUES (?)', params: ['k1'] }], []);
  const refused = db.writePlanned(
    [
      { sql: 'INSERT INTO t VALUES (?)', params: ['gone'] },
      { sql: 'INSERT INTO u VALUES (?)', params: ['k1'] },
    ],
    [],
  );
  await assert.rejects(refused, /UNIQUE/);
  assert.deepEqual(tableValues(db), []);
  const lines = await journalLines(dir);
  assert.match(lines[lines.length - 1], /"v":/, 'the last record is the void record');
  await db.close();
  db = await openTable(dir);
  assert.deepEqual(tableValues(db), []);
  assert.equal(db.all('SELECT k FROM u').length, 1);
  await db.close();

  // Killed after the record was written and before its void record was: the record alone fails at replay
  // as it failed live (its statements are deterministic), and nothing of it is applied.
  await cutJournal(dir, lines.length - 1);
  db = await openTable(dir);
  assert.deepEqual(tableValues(db), []);
  assert.equal(db.all('SELECT k FROM u').length, 1);
});

test('a message for a conversation not found is refused before its hand-off: it journals nothing, and a restart brings nothing back', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('planned-write-');
  t.after(cleanup);
  let store = await openStore(dir);
  t.after(() => store.close());
  await store.conversations.create({ id: 'c1', title: 't', source: 'ws', created_at: iso(0) });
  await store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'hi', timestamp: iso(1) });
  const before = store.db.stats();
  const lines = await journalLines(dir);
  await assert.rejects(store.messages.append({ id: 'm2', conversation_id: 'nowhere', role: 'assistant', content: 'hello', timestamp: iso(2) }), /conversation nowhere not found/);
  await assert.rejects(
    store.messages.appendMany([
      { id: 'm3', conversation_id: 'c1', role: 'assistant', content: 'a', timestamp: iso(3) },
      { id: 'm4', conversation_id: 'nowhere', role: 'assistant', content: 'b', timestamp: iso(4) },
    ]),
    /conversation nowhere not found/,
  );
  const row = conversationRow(store);
  assert.deepEqual(messageIds(store), ['m1']);
  assert.equal(store.db.stats().lastSeq, before.lastSeq);
  assert.deepEqual(await journalLines(dir), lines);
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(messageIds(store), ['m1']);
  assert.deepEqual(conversationRow(store), row);
  await store.messages.append({ id: 'm5', conversation_id: 'c1', role: 'assistant', content: 'again', timestamp: iso(5) });
  // And one with more in its transaction (not planned: Database.write) beside it.
  await store.messages.appendMany([{ id: 'm6', conversation_id: 'c1', role: 'user', content: 'more', timestamp: iso(6) }], () => undefined);
  assert.deepEqual(messageIds(store), ['m1', 'm5', 'm6']);
  const stored = conversationRow(store);
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(messageIds(store), ['m1', 'm5', 'm6'], 'both paths replay alike');
  assert.deepEqual(conversationRow(store), stored);
});

test('a reply with its usage row in one planned write: both applied, both replayed', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('planned-write-');
  t.after(cleanup);
  let store = await openStore(dir);
  t.after(() => store.close());
  await store.conversations.create({ id: 'c1', title: 't', source: 'ws', created_at: iso(0) });
  const usage = {
    message_id: 'r1',
    conversation_id: 'c1',
    source: 'ws',
    day: '2026-01-01',
    updated_at: iso(1),
    provider: 'p',
    model: 'm',
    input: 10,
    output: 5,
    cached: 0,
    cost_micro: 7,
    estimated: false,
    calls: 1,
    context_used: 15,
    context_window: 100,
  };
  await store.messages.appendMany([{ id: 'r1', conversation_id: 'c1', role: 'assistant', content: 'answer', timestamp: iso(1) }], [usageOp(usage)]);
  const rows = () => store.db.all('SELECT message_id, input, output, cost_micro FROM usage');
  assert.deepEqual(rows(), [{ message_id: 'r1', input: 10, output: 5, cost_micro: 7 }]);
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(messageIds(store), ['r1']);
  assert.deepEqual(rows(), [{ message_id: 'r1', input: 10, output: 5, cost_micro: 7 }]);
});

test('a void record a full disk refuses stays with its record: a rotation asked meanwhile does not close the segment without it', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('planned-write-');
  t.after(cleanup);
  let db = await openTable(dir);
  t.after(() => db.close());
  await db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['kept']));
  let refuseVoid = true;
  const restore = await onJournalWrite(
    () => undefined,
    (data) => refuseVoid && data.includes('"v":'),
  );
  t.after(restore);
  // compact() (backups call it) asks the journal's rotation in the same tick as the failing write.
  const compacted = db.compact().catch((error: unknown) => error);
  const refused = db.writePlanned(
    [
      {
        sql: 'INSERT INTO t VALUES (?)',
        params: ['gone'],
        check: () => {
          throw new Error('refused by its check');
        },
      },
    ],
    [],
  );
  await assert.rejects(refused, /refused by its check/);
  // The rotation is refused while the void record is owed (the segment is not closed without it).
  assert.match(String(await compacted), /disk full/);
  refuseVoid = false;
  await db.write((tx) => tx.run('INSERT INTO t VALUES (?)', ['after']));
  assert.deepEqual(tableValues(db), ['kept', 'after']);
  await db.close();
  db = await openTable(dir);
  assert.deepEqual(tableValues(db), ['kept', 'after'], 'a restart gives what the live store held');
});
