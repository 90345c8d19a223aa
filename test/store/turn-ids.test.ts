// The reply that ended a turn, and the turn a message belongs to, are found from the messages'
// metadata alone (undo_turn's list of turns asks them for every turn that changed files): no body is
// read, so no round trip to the history worker for bodies not kept in memory.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../src/store/index';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };
const iso = (ms: number) => new Date(Date.UTC(2024, 0, 1) + ms).toISOString();

test('replyOfTurn and turnOf read no message body', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('turn-ids-');
  t.after(cleanup);
  let store = await openStore(dir);
  await store.conversations.create({ id: 'c', title: 'c', source: 'ws', created_at: iso(0) });
  await store.messages.appendMany([
    { id: 'u1', conversation_id: 'c', role: 'user', content: 'write the file', timestamp: iso(1) },
    { id: 't1', conversation_id: 'c', role: 'tool', tool_name: 'write_file', content: '{}', timestamp: iso(2), data: { kind: 'call', call_id: 'x', batch: 'b', arguments: {} } },
    { id: 'a1', conversation_id: 'c', role: 'assistant', content: 'written', timestamp: iso(3) },
  ]);
  await store.close();
  // Reopened: no body is in memory, each one read would be a request to the history worker.
  store = await openStore(dir);
  t.after(() => store.close());
  let bodyReads = 0;
  const get = store.history.get.bind(store.history);
  store.history.get = async (keys) => {
    if (keys.length > 0) bodyReads += 1;
    return get(keys);
  };
  assert.equal(await store.messages.replyOfTurn('c', 'u1'), 'a1');
  assert.equal(await store.messages.turnOf('c', 'a1'), 'u1');
  assert.equal(await store.messages.turnOf('c', 't1'), 'u1');
  assert.equal(await store.messages.replyOfTurn('other', 'u1'), undefined, 'a turn of another conversation');
  assert.equal(bodyReads, 0, 'bodies read to find ids');
  // The bodies are still there for whoever reads them.
  assert.equal((await store.messages.get('a1'))?.content, 'written');
  assert.equal(bodyReads, 1);
});
