// A message append reads its conversation's row before its record is handed to the journal (the planned
// write's `ready`), so that a conversation not found journals nothing. The read is the conversation's owner,
// kept in memory while no write statement could have changed which conversations exist (ConversationsRepo's
// owners memo, read-memo.ts; since s19 in place of the append's own "nothing written since" test): appends
// skip it while nothing naming conversations was written but their own updates; a conversation deleted in
// between is read again, refused, and journals nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore, usageOp } from '../../src/store/index';
import type { Store } from '../../src/store/index';
import { tempDir } from '../helpers/store-utils';

const LIMIT = { timeout: 60_000 };
const iso = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
const PRESENT = 'SELECT source FROM conversations WHERE id = ?';

async function opened(t: { after: (fn: () => Promise<void>) => void }): Promise<Store> {
  const { dir, cleanup } = await tempDir('append-present-');
  const store = await openStore(dir);
  t.after(async () => {
    await store.close();
    await cleanup();
  });
  return store;
}

/** Counts the store's reads of `sql` (by default a conversation's presence) from now on. */
function countReads(store: Store, read = PRESENT): { reads: number } {
  const counted = { reads: 0 };
  const get = store.db.get.bind(store.db);
  store.db.get = ((sql: string, params?: never) => {
    if (sql === read) counted.reads += 1;
    return get(sql, params);
  }) as typeof store.db.get;
  return counted;
}

/** A message's seq as its row holds it. */
function rowSeq(store: Store, id: string): number | undefined {
  return store.db.all<{ seq: number }>('SELECT seq FROM messages WHERE id = ?', [id])[0]?.seq;
}

test('a conversation deleted after an append refuses the next append and journals nothing', LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'lan', created_at: iso(0) });
  await store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'one', timestamp: iso(1) });
  assert.equal(await store.conversations.delete('c1'), true);
  // The delete's kick of the maintenance frees its messages (writes of their own): done before counting.
  await store.maintenance.run();
  const before = store.db.stats();
  await assert.rejects(store.messages.append({ id: 'm2', conversation_id: 'c1', role: 'user', content: 'two', timestamp: iso(2) }), /conversation c1 not found/);
  // Refused before its record's hand-off: no record, no void record.
  assert.equal(store.db.stats().lastSeq, before.lastSeq);
  assert.equal(store.db.stats().journalBytes, before.journalBytes);
  assert.equal(await store.messages.get('m2'), undefined);
});

test('a conversation deleted by any write (not the messages repository) between appends is read again and refused', LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'lan', created_at: iso(0) });
  await store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'one', timestamp: iso(1) });
  await store.db.write((tx) => {
    tx.run('DELETE FROM messages WHERE conversation_id = ?', ['c1']);
    tx.run('DELETE FROM conversations WHERE id = ?', ['c1']);
  });
  const before = store.db.stats();
  const counted = countReads(store);
  await assert.rejects(store.messages.appendMany([{ id: 'm2', conversation_id: 'c1', role: 'assistant', content: 'two', timestamp: iso(2) }]), /conversation c1 not found/);
  assert.equal(counted.reads, 1);
  assert.equal(store.db.stats().lastSeq, before.lastSeq);
  assert.equal(store.db.stats().journalBytes, before.journalBytes);
});

test("appends read a conversation's row once; a write that may change which conversations exist reads it again, another write does not", LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'lan', created_at: iso(0) });
  await store.conversations.create({ id: 'c2', title: 't', source: 'lan', created_at: iso(0) });
  const counted = countReads(store);
  await store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'one', timestamp: iso(1) });
  await store.messages.append({ id: 'm2', conversation_id: 'c1', role: 'assistant', content: 'two', timestamp: iso(2) });
  await store.messages.append({ id: 'm3', conversation_id: 'c1', role: 'user', content: 'three', timestamp: iso(3) });
  assert.equal(counted.reads, 1);
  // A write of another table: nothing to read again.
  await store.meta.set('k', 'v');
  await store.messages.append({ id: 'm4', conversation_id: 'c1', role: 'assistant', content: 'four', timestamp: iso(4) });
  assert.equal(counted.reads, 1);
  // Another conversation: its own read; c1 still known.
  await store.messages.append({ id: 'm5', conversation_id: 'c2', role: 'user', content: 'five', timestamp: iso(5) });
  await store.messages.append({ id: 'm6', conversation_id: 'c1', role: 'assistant', content: 'six', timestamp: iso(6) });
  assert.equal(counted.reads, 2);
  // A conversation made: which conversations exist may have changed, every append reads again.
  await store.conversations.create({ id: 'c3', title: 't', source: 'lan', created_at: iso(7) });
  await store.messages.append({ id: 'm7', conversation_id: 'c1', role: 'user', content: 'seven', timestamp: iso(7) });
  await store.messages.append({ id: 'm8', conversation_id: 'c2', role: 'user', content: 'eight', timestamp: iso(8) });
  assert.equal(counted.reads, 4);
  assert.deepEqual(
    (await store.messages.recent('c1', { limit: 10 })).map((m) => m.id),
    ['m1', 'm2', 'm3', 'm4', 'm6', 'm7'],
  );
});

test('an append voided after its hand-off (a statement failed) changes no conversation: the next append is refused or stored as before', LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'lan', created_at: iso(0) });
  await store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'one', timestamp: iso(1) });
  // The same id again: the INSERT fails after the record's hand-off, the record is voided.
  const voided = store.db.stats().lastSeq;
  await assert.rejects(store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'again', timestamp: iso(2) }), /UNIQUE/);
  assert.equal(store.db.stats().lastSeq, voided + 2);
  const counted = countReads(store);
  await store.messages.append({ id: 'm2', conversation_id: 'c1', role: 'assistant', content: 'two', timestamp: iso(3) });
  assert.equal(counted.reads, 0, 'the owner kept: the voided write named conversations only in an update of its row');
  assert.equal(rowSeq(store, 'm2'), store.messages.seqOf('m2'));
});

test("the seqs of an append's messages are told without a read while nothing is written since; after a write, read", LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'lan', created_at: iso(0) });
  await store.conversations.create({ id: 'c2', title: 't', source: 'lan', created_at: iso(0) });
  await store.messages.append({ id: 'm0', conversation_id: 'c2', role: 'user', content: 'other', timestamp: iso(1) });
  const counted = countReads(store, 'SELECT seq FROM messages WHERE id = ?');
  const usage = {
    message_id: 'm2',
    conversation_id: 'c1',
    source: 'ws',
    day: '2026-01-01',
    updated_at: iso(2),
    provider: 'p',
    model: 'm',
    input: 1,
    output: 1,
    cached: 0,
    cost_micro: 1,
    estimated: false,
    calls: 1,
    context_used: 2,
    context_window: 100,
  };
  // Several messages, and an INSERT of another table after them (a usage row) in the same transaction.
  await store.messages.appendMany(
    [
      { id: 'm1', conversation_id: 'c1', role: 'tool', content: 'a', timestamp: iso(2), tool_name: 'x' },
      { id: 'm2', conversation_id: 'c1', role: 'assistant', content: 'b', timestamp: iso(2) },
    ],
    [usageOp(usage)],
  );
  const seqs = ['m1', 'm2'].map((id) => store.messages.seqOf(id));
  assert.equal(counted.reads, 0);
  assert.deepEqual(seqs, [rowSeq(store, 'm1'), rowSeq(store, 'm2')]);
  assert.ok(seqs[0]! > rowSeq(store, 'm0')! && seqs[1] === seqs[0]! + 1);
  // Not of that append: read.
  assert.equal(store.messages.seqOf('m0'), rowSeq(store, 'm0'));
  assert.equal(store.messages.seqOf('nope'), undefined);
  assert.equal(counted.reads, 2);
  // Deleted since: read, and gone.
  await store.db.write((tx) => tx.run('DELETE FROM messages WHERE id = ?', ['m2']));
  assert.equal(store.messages.seqOf('m2'), undefined);
  assert.equal(store.messages.seqOf('m1'), rowSeq(store, 'm1'));
  assert.equal(counted.reads, 4);
});

test('an append voided after its hand-off tells no seq of its own', LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'lan', created_at: iso(0) });
  await store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'one', timestamp: iso(1) });
  // m2 is inserted, then m1 again fails: the whole append is rolled back and voided.
  await assert.rejects(
    store.messages.appendMany([
      { id: 'm2', conversation_id: 'c1', role: 'assistant', content: 'two', timestamp: iso(2) },
      { id: 'm1', conversation_id: 'c1', role: 'user', content: 'again', timestamp: iso(2) },
    ]),
    /UNIQUE/,
  );
  assert.equal(store.messages.seqOf('m2'), undefined);
  assert.equal(store.messages.seqOf('m1'), rowSeq(store, 'm1'));
});

test('a closed store tells no seq from memory: seqOf says it is closed, as a read does (review18e)', LIMIT, async () => {
  const { dir, cleanup } = await tempDir('append-present-closed-');
  const store = await openStore(dir);
  try {
    await store.conversations.create({ id: 'c1', title: 't', source: 'lan', created_at: iso(0) });
    await store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'hello', timestamp: iso(1) });
    assert.equal(typeof store.messages.seqOf('m1'), 'number');
  } finally {
    await store.close();
  }
  // The history cache forgets a closed store's conversation by this error (history-cache.ts, its `later` add).
  assert.throws(() => store.messages.seqOf('m1'), /the store is closed/);
  await cleanup();
});
