// Reads that ask history.db for a conversation's cold rows and sql.js for the rest (MessagesRepo.after,
// which the agent's history cache reads new rows with, and replyTo, which a resend's answer comes from)
// while the history maintenance moves that conversation's rows to history.db (moveCold): a move that
// lands while the read waits for history.db must not make rows vanish from its answer. Real store in a
// temp dir; the interleaving is forced by running a maintenance pass inside the cold read's wait.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { openStore } from '../../src/store/index';
import type { NewMessage, Store } from '../../src/store/index';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };

/** Runs a maintenance pass inside the first cold read's wait (after it was sent) until `undo` is called. */
function passDuringFirstColdRead(store: Store): { undo: () => void } {
  const history = store.history as unknown as { cold: (...args: unknown[]) => Promise<unknown> };
  const cold = history.cold.bind(history);
  let reads = 0;
  history.cold = async (...args: unknown[]) => {
    const answer = cold(...args);
    if (reads++ === 0) await store.maintenance.run();
    return answer;
  };
  return { undo: () => (history.cold = cold) };
}

const coldSeq = (store: Store) => store.db.get<{ cold_seq: number }>('SELECT cold_seq FROM conversations WHERE id = ?', ['c1'])!.cold_seq;

type Role = 'user' | 'assistant' | 'tool';

/**
 * A store that keeps 3 messages' metadata in sql.js, with conversation c1 of an hour ago, and how to make
 * its message `m<i>` of `roles[i]` (body `body <i>`).
 */
async function storeOfOneConversation(t: TestContext, roles: readonly Role[]): Promise<{ store: Store; message: (i: number) => NewMessage }> {
  const { dir, cleanup } = await tempDir('cold-race-');
  t.after(cleanup);
  const store = await openStore(dir, { hotMessages: 3 });
  t.after(() => store.close());
  const at = new Date(Date.now() - 3_600_000).toISOString();
  await store.conversations.create({ id: 'c1', title: 'c1', source: 'ws', created_at: at });
  const message = (i: number): NewMessage => ({ id: `m${i}`, conversation_id: 'c1', role: roles[i], content: `body ${i}`, timestamp: at, ...(roles[i] === 'tool' ? { tool_name: 'read_file' } : {}) });
  return { store, message };
}

test('after() returns every row when a cold move of the same conversation lands during its cold read', LIMIT, async (t) => {
  const { store, message } = await storeOfOneConversation(t, ['user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  await store.messages.appendMany([0, 1, 2, 3, 4, 5].map(message));
  await store.maintenance.run();
  const coldBefore = coldSeq(store);
  assert.ok(coldBefore > 0, 'the first rows went cold');
  await store.messages.appendMany([6, 7, 8, 9].map(message));

  // The next maintenance pass lands while after() waits for history.db's answer.
  const pass = passDuringFirstColdRead(store);
  const rows = await store.messages.after('c1', 0);
  pass.undo();
  assert.ok(coldSeq(store) > coldBefore, 'the pass moved more rows meanwhile (the race happened)');
  assert.deepEqual(
    rows.map((r) => r.id),
    ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9'],
  );
  assert.deepEqual(
    rows.map((r) => r.content),
    rows.map((_, i) => `body ${i}`),
  );
});

test('replyTo finds the reply when the move of its rows lands during the cold read of its turn', LIMIT, async (t) => {
  // Turn m2 calls two tools and ends with the reply m5; the first pass leaves m4 and m5 in sql.js.
  const { store, message } = await storeOfOneConversation(t, ['user', 'assistant', 'user', 'tool', 'tool', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  await store.messages.appendMany([0, 1, 2, 3, 4, 5].map(message));
  await store.maintenance.run();
  const user = await store.messages.get('m2');
  assert.ok(user && user.seq <= coldSeq(store), 'the turn began in the cold rows');
  assert.equal((await store.messages.replyTo(user))?.id, 'm5', 'found without a move in between');
  await store.messages.appendMany([6, 7, 8, 9].map(message));
  const coldBefore = coldSeq(store);

  const pass = passDuringFirstColdRead(store);
  const reply = await store.messages.replyTo(user);
  pass.undo();
  assert.ok(coldSeq(store) > coldBefore, 'the pass moved the reply meanwhile (the race happened)');
  assert.equal(reply?.id, 'm5');
  assert.equal(reply?.content, 'body 5');
});
