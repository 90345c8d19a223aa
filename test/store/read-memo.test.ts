// A turn's reads of its conversation's owner (ConversationsRepo.sourceOf) and worktree (WorktreesRepo.get)
// are answered from memory while no write since named their table (Database.memo, s19 turn19a). Every
// writer must be seen: the repos' own, another module's statement in a write of its own, a write rolled
// back, and a read made inside a write that is then rolled back. A closed store answers nothing from memory.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { touchesOwners, trashConversation } from '../../src/store/conversations';
import { openStore } from '../../src/store/index';
import type { Store } from '../../src/store/index';
import type { WorktreeRecord } from '../../src/protocol/worktrees';
import { captureLogger, tempDir } from '../helpers/store-utils';

const LIMIT = { timeout: 60_000 };
const iso = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
const OWNER = 'SELECT source FROM conversations WHERE id = ?';

async function opened(t: { after: (fn: () => Promise<void>) => void }): Promise<Store> {
  const { dir, cleanup } = await tempDir('read-memo-');
  const store = await openStore(dir);
  t.after(async () => {
    await store.close().catch(() => undefined);
    await cleanup();
  });
  return store;
}

/** Counts the store's reads whose text starts with `prefix` from now on. */
function countReads(store: Store, prefix: string): { reads: number } {
  const counted = { reads: 0 };
  const get = store.db.get.bind(store.db);
  store.db.get = ((sql: string, params?: never) => {
    if (sql.startsWith(prefix)) counted.reads += 1;
    return get(sql, params);
  }) as typeof store.db.get;
  return counted;
}

function worktree(conversationId: string, n: number): WorktreeRecord {
  return { conversationId, repository: '/repo', path: `/repo.worktrees/w${n}`, branch: `assistant/w${n}`, baseBranch: 'main', baseCommit: 'a'.repeat(40), state: 'active', createdAt: iso(n) };
}

test("a conversation's owner is read once while nothing that names conversations (but a message's own update) is written", LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'webhook:crm', created_at: iso(1) });
  const counted = countReads(store, OWNER);
  assert.equal(store.conversations.sourceOf('c1'), 'webhook:crm');
  assert.equal(store.conversations.sourceOf('c1'), 'webhook:crm');
  assert.equal(store.conversations.sourceOf('none'), undefined);
  assert.equal(store.conversations.sourceOf('none'), undefined);
  assert.equal(counted.reads, 2);
  // A message's append (UPDATE conversations SET updated_at ... WHERE id = ?), a touch, a plan, a meta row: no owner changes.
  await store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'hi', timestamp: iso(2) });
  await store.conversations.touch('c1', iso(3));
  await store.meta.set('k', 'v');
  assert.equal(store.conversations.sourceOf('c1'), 'webhook:crm');
  assert.equal(counted.reads, 2);
});

test("every writer of a conversation's row or its id is seen by the owner read", LIMIT, async (t) => {
  const store = await opened(t);
  const make = (id: string, source: string) => store.conversations.create({ id, title: 't', source, created_at: iso(1) });
  await make('c1', 'webhook:crm');
  assert.equal(store.conversations.sourceOf('c1'), 'webhook:crm');
  // Deleted, then made again by another source.
  assert.equal(await store.conversations.delete('c1'), true);
  assert.equal(store.conversations.sourceOf('c1'), undefined);
  await make('c1', 'webhook:other');
  assert.equal(store.conversations.sourceOf('c1'), 'webhook:other');
  // Another module's delete, in a write of its own (retention's trashConversation).
  await store.db.write((tx) => trashConversation(tx, 'c1'));
  assert.equal(store.conversations.sourceOf('c1'), undefined);
  // A statement that changes the owner itself, and one that renames the id.
  await make('c2', 'webhook:crm');
  assert.equal(store.conversations.sourceOf('c2'), 'webhook:crm');
  await store.db.write((tx) => tx.run('UPDATE conversations SET source = ? WHERE id = ?', ['webhook:other', 'c2']));
  assert.equal(store.conversations.sourceOf('c2'), 'webhook:other');
  await store.db.write((tx) => tx.run('UPDATE conversations SET id = ? WHERE id = ?', ['c3', 'c2']));
  assert.equal(store.conversations.sourceOf('c2'), undefined);
  assert.equal(store.conversations.sourceOf('c3'), 'webhook:other');
});

test('a write rolled back leaves the owner read as the database has it, even when read inside that write', LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'webhook:crm', created_at: iso(1) });
  assert.equal(store.conversations.sourceOf('c1'), 'webhook:crm');
  assert.equal(store.conversations.sourceOf('c9'), undefined);
  await assert.rejects(
    store.db.write((tx) => {
      tx.run('DELETE FROM conversations WHERE id = ?', ['c1']);
      tx.run("INSERT INTO conversations (id, title, source, created_at, updated_at) VALUES ('c9', 't', 'webhook:other', ?, ?)", [iso(2), iso(2)]);
      // Read inside the transaction: what it sees is undone below.
      assert.equal(store.conversations.sourceOf('c1'), undefined);
      assert.equal(store.conversations.sourceOf('c9'), 'webhook:other');
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
  assert.equal(store.conversations.sourceOf('c1'), 'webhook:crm');
  assert.equal(store.conversations.sourceOf('c9'), undefined);
});

test('a closed store answers no owner and no worktree from memory', LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'ws', created_at: iso(1) });
  await store.worktrees.insert(worktree('c1', 1));
  assert.equal(store.conversations.sourceOf('c1'), 'ws');
  assert.equal(store.worktrees.get('c1')?.path, '/repo.worktrees/w1');
  await store.close();
  assert.throws(() => store.conversations.sourceOf('c1'), /closed/);
  assert.throws(() => store.worktrees.get('c1'), /closed/);
});

test("a conversation's worktree is read once while nothing names worktrees, and every writer of it is seen", LIMIT, async (t) => {
  const store = await opened(t);
  await store.conversations.create({ id: 'c1', title: 't', source: 'ws', created_at: iso(1) });
  const counted = countReads(store, 'SELECT conversation_id, repository');
  assert.equal(store.worktrees.get('c1'), undefined);
  assert.equal(store.worktrees.worktreeOf('c1'), undefined);
  assert.equal(counted.reads, 1);
  await store.messages.append({ id: 'm1', conversation_id: 'c1', role: 'user', content: 'hi', timestamp: iso(2) });
  assert.equal(store.worktrees.get('c1'), undefined);
  assert.equal(counted.reads, 1);

  await store.worktrees.insert(worktree('c1', 1));
  assert.equal(store.worktrees.get('c1')?.state, 'active');
  // What the caller is handed cannot change what the next caller is told.
  store.worktrees.get('c1')!.state = 'landed';
  assert.equal(store.worktrees.get('c1')?.state, 'active');
  await store.worktrees.setState('c1', 'missing');
  assert.equal(store.worktrees.get('c1')?.state, 'missing');
  await store.worktrees.setStats('c1', { changedFiles: 3, baseMoved: true });
  assert.deepEqual([store.worktrees.get('c1')?.changedFiles, store.worktrees.get('c1')?.baseMoved], [3, true]);
  // Another writer's statement.
  await store.db.write((tx) => tx.run("UPDATE worktrees SET state = 'landed' WHERE conversation_id = ?", ['c1']));
  assert.equal(store.worktrees.get('c1')?.state, 'landed');
  assert.equal(await store.worktrees.remove('c1'), true);
  assert.equal(store.worktrees.get('c1'), undefined);
  await store.worktrees.insert(worktree('c1', 2));
  assert.equal(store.worktrees.get('c1')?.path, '/repo.worktrees/w2');
  await store.db.write((tx) => tx.run('DELETE FROM worktrees'));
  assert.equal(store.worktrees.get('c1'), undefined);
});

test('no trigger, no foreign key of conversations or worktrees and no REPLACE conflict clause of theirs can change them behind a statement that does not name them', LIMIT, async (t) => {
  const store = await opened(t);
  assert.deepEqual(store.db.all("SELECT name FROM sqlite_master WHERE type = 'trigger'"), []);
  for (const table of ['conversations', 'worktrees']) {
    assert.deepEqual(store.db.all(`SELECT "table" FROM pragma_foreign_key_list(?)`, [table]), []);
    // An UPDATE that keeps owners (touchesOwners) could still delete rows through a REPLACE conflict clause.
    const { sql } = store.db.get<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [table])!;
    assert.doesNotMatch(sql, /ON\s+CONFLICT\s+REPLACE/i);
  }
});

test("a message's seq is what its INSERT returns; records with the INSERT of builds before it (no RETURNING) replay to the same rows", LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('read-memo-replay-');
  t.after(cleanup);
  const { logger, lines } = captureLogger();
  const store = await openStore(dir, { logger });
  await store.conversations.create({ id: 'c1', title: 't', source: 'ws', created_at: iso(1) });
  // The text builds before s19 journaled (and tests still write).
  await store.db.write((tx) =>
    tx.run('INSERT INTO messages (id, conversation_id, role, content, timestamp, tool_name, user_id, data, client_key, body_key, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [
      'old',
      'c1',
      'user',
      'before',
      iso(2),
      null,
      null,
      null,
      null,
      null,
      6,
    ]),
  );
  await store.messages.append({ id: 'new1', conversation_id: 'c1', role: 'user', content: 'hi', timestamp: iso(3) });
  await store.messages.appendMany([
    { id: 'new2', conversation_id: 'c1', role: 'assistant', content: 'hello', timestamp: iso(4) },
    { id: 'new3', conversation_id: 'c1', role: 'user', content: 'again', timestamp: iso(5) },
  ]);
  const told = ['new1', 'new2', 'new3'].map((id) => store.messages.seqOf(id));
  const rows = () => store.db.all<{ seq: number; id: string }>('SELECT seq, id FROM messages ORDER BY seq');
  const before = rows();
  assert.deepEqual(
    before.map((r) => r.id),
    ['old', 'new1', 'new2', 'new3'],
  );
  assert.deepEqual(
    told,
    before.slice(1).map((r) => r.seq),
  );
  await store.close();

  const reopened = await openStore(dir, { logger });
  t.after(() => reopened.close());
  // Replayed from the journal (nothing was folded into a snapshot): the same rows, the same seqs.
  assert.ok(lines.some((l) => l.event === 'store.opened' && Number(l.fields.replayed) >= 4));
  const after = reopened.db.all<{ seq: number; id: string }>('SELECT seq, id FROM messages ORDER BY seq');
  assert.deepEqual(after, before);
});

test('a key longer than an id is read each time, never kept (review19a: a client-chosen conversation_id of megabytes, 1,024 of them held)', LIMIT, async (t) => {
  const store = await opened(t);
  const counted = countReads(store, OWNER);
  const long = 'x'.repeat(100_000);
  assert.equal(store.conversations.sourceOf(long), undefined);
  assert.equal(store.conversations.sourceOf(long), undefined);
  assert.equal(counted.reads, 2, 'a long key is not kept');
  const id = '0f8fad5b-d9cb-469f-a165-70867728950e';
  store.conversations.sourceOf(id);
  store.conversations.sourceOf(id);
  assert.equal(counted.reads, 3, 'an id is kept');
});

test('a text of several statements is never taken for a message\'s update (review19a: its middle part accepted ";")', () => {
  assert.equal(touchesOwners('UPDATE conversations SET title = ? WHERE id = ?'), false);
  assert.equal(touchesOwners("UPDATE conversations SET title = 'x' WHERE rowid = 0; DELETE FROM conversations; UPDATE conversations SET title = 'x' WHERE id = ?"), true);
});
