// The scratch store the warm-up's practice turn runs on (store/scratch.ts): the store's own code over
// sql.js in memory (journaled nowhere) and a database in memory in the real store's history worker, on
// a channel of its own. What is written there reaches no file of the data directory, no journal record
// and no body or fsync of history.db, and the real store goes on beside it, in the same worker.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore, type NewMessage, type Store } from '../../src/store/index';
import { openScratchStore } from '../../src/store/scratch';
import { tempDir } from '../helpers/store-utils';

const iso = (ms: number) => new Date(Date.UTC(2024, 0, 1) + ms).toISOString();
const message = (conversation: string, id: string, content: string, ms: number): NewMessage => ({ id, conversation_id: conversation, role: 'user', content, timestamp: iso(ms) });

async function traces(store: Store) {
  const { maxKey } = await store.history.stats();
  return { seq: store.db.stats().lastSeq, maxKey };
}

test('a scratch store keeps its writes in memory: the data directory, the journal and history.db are untouched, and the real store goes on beside it', { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('scratch-store-');
  t.after(cleanup);
  const store = await openStore(dir);
  t.after(() => store.close());
  await store.conversations.create({ id: 'real', title: 'real', source: 'ws', created_at: iso(0) });
  await store.messages.append(message('real', 'r1', 'a real message', 1));
  await store.db.flush();
  const before = await traces(store);

  const scratch = await openScratchStore(store);
  await scratch.conversations.create({ id: 'practice', title: 'practice', source: 'ws', created_at: iso(2) });
  // Written while a real message is: the worker keeps both channels apart.
  await Promise.all([
    scratch.messages.appendMany([message('practice', 'p1', 'a practice message', 3), message('practice', 'p2', 'and its reply', 4)]),
    store.messages.append(message('real', 'r2', 'another real one', 5)),
  ]);
  assert.deepEqual(
    (await scratch.messages.recent('practice')).map((m) => m.content),
    ['a practice message', 'and its reply'],
  );
  assert.equal(await scratch.history.search('practice', null, 10).then((hits) => hits.length), 1, "the scratch's bodies are in its own search index");
  assert.equal(scratch.conversations.get('real'), undefined);
  await scratch.close();

  assert.equal(store.conversations.get('practice'), undefined);
  assert.deepEqual(
    (await store.messages.recent('real')).map((m) => m.content),
    ['a real message', 'another real one'],
  );
  assert.equal((await store.history.search('practice', null, 10)).length, 0, 'no practice body in history.db');
  await store.db.flush();
  const after = await traces(store);
  // Exactly what the one real message wrote: one record, one body.
  assert.equal(after.seq, before.seq + 1);
  assert.equal(after.maxKey, before.maxKey + 1);
  await store.close();
  // Once closed, history.db holds the real bodies only: reopened, it reads both real messages and no other.
  const again = await openStore(dir);
  try {
    assert.deepEqual(
      (await again.messages.recent('real')).map((m) => m.content),
      ['a real message', 'another real one'],
    );
    assert.equal(again.conversations.get('practice'), undefined);
    assert.equal((await again.history.stats()).maxKey, before.maxKey + 1);
  } finally {
    await again.close();
  }
});
