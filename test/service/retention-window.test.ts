// Retention's window (s31), as a client meets it: a user who resumes an old conversation while retention
// is deleting it (held between two of its batches) is answered not_found, as after delete_conversation,
// rather than acknowledged and then silently deleted; meanwhile the conversation is not listed nor read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../src/store/index';
import { withService } from '../helpers/service-fixture';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const DAY = 86_400_000;
const OLD_MESSAGES = 1000;

test('a chat to a conversation retention is deleting is not_found, not acknowledged then lost; it is neither listed nor read meanwhile', { timeout: 90_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('ra-retention-window-');
  t.after(cleanup);
  // 'old': idle 60 days, five of retention's batches; 'keep': active today.
  const old = Date.now() - 60 * DAY;
  const store = await openStore(dir);
  await store.conversations.create({ id: 'old', title: 'old', source: 'ws', created_at: new Date(old).toISOString() });
  for (let i = 0; i < OLD_MESSAGES; i += 200) {
    await store.messages.appendMany(
      Array.from({ length: 200 }, (_, k) => ({ id: `old-${i + k}`, conversation_id: 'old', role: 'user' as const, content: `old ${i + k}`, timestamp: new Date(old + i + k).toISOString() })),
    );
  }
  await store.conversations.create({ id: 'keep', title: 'keep', source: 'ws', created_at: new Date().toISOString() });
  await store.close();

  // No retention in service.json: the pass is started below, once it can be held between two batches.
  const svc = await withService(t, { config: { model: 'fake-model' }, options: { dataDir: dir } });
  const { store: served } = svc.service;
  await served.maintenance.run();
  const rows = () => served.db.get<{ n: number }>("SELECT count(*) AS n FROM messages WHERE conversation_id = 'old'")?.n ?? 0;
  const remove = served.history.remove.bind(served.history);
  let arrive!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (arrive = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  served.history.remove = async (keys) => {
    if (keys.length > 0 && rows() < OLD_MESSAGES) {
      arrive();
      await gate;
    }
    return remove(keys);
  };
  served.maintenance.setPolicy({ maxDays: 30 });
  const pass = served.maintenance.run();
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  let chat: Record<string, unknown>;
  try {
    await reached;
    assert.ok(rows() > 0 && rows() < OLD_MESSAGES, `held between batches: ${rows()} rows left`);
    const listed = await client.request({ type: 'list_conversations' });
    assert.deepEqual(
      (listed.data as { conversations: { id: string }[] }).conversations.map((c) => c.id),
      ['keep'],
      'a conversation being deleted is listed',
    );
    const read = await client.request({ type: 'get_messages', conversation_id: 'old' });
    assert.equal(read.code, 'not_found', `a conversation being deleted is read: ${JSON.stringify(read).slice(0, 200)}`);
    svc.fake.script({ text: 'welcome back' });
    chat = await client.request({ type: 'chat', message: 'back to this one', conversation_id: 'old' });
  } finally {
    release();
  }
  await pass;
  const after = await client.request({ type: 'get_messages', conversation_id: 'old' });
  client.close();
  if (chat.status === 'ok') assert.notEqual(after.code, 'not_found', 'an acknowledged chat was deleted with its conversation');
  assert.equal(chat.status, 'error', JSON.stringify(chat));
  assert.equal(chat.code, 'not_found', 'as a chat to a conversation delete_conversation deleted');
  assert.equal(after.code, 'not_found');
  assert.equal(rows(), 0, 'its rows are freed');
});

test('retention does not delete a conversation under its running turn: max_bytes over by the newest conversation alone spares it until the turn ends', { timeout: 90_000 }, async (t) => {
  const svc = await withService(t, { config: { model: 'fake-model' } });
  const { store } = svc.service;
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(() => client.close());
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  t.after(release);
  svc.fake.script({ text: 'an answer in three pieces', chunks: 3, holdAfterChunks: { chunks: 1, until } });
  const before = svc.fake.requests.length;
  client.send({ type: 'chat', message: 'a long question', id: 'busy' });
  await svc.fake.waitFor((requests) => requests.length > before, 20_000);
  const busy = store.conversations.list({ limit: 1 })[0].id;

  // The turn is with the model: its conversation is the newest, and alone over max_bytes.
  store.maintenance.setPolicy({ maxBytes: 1 });
  await store.maintenance.run();
  assert.ok(store.conversations.get(busy), 'deleted under its running turn');
  release();
  const answer = await client.next((f) => f.id === 'busy' && 'status' in f, 30_000);
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  const read = await client.request({ type: 'get_messages', conversation_id: busy });
  assert.deepEqual(
    (read.data as { messages: { role: string }[] }).messages.map((m) => m.role),
    ['user', 'assistant'],
  );
  // Its turn ended: the next pass deletes it (the policy said so).
  await store.maintenance.run();
  assert.equal(store.conversations.get(busy), undefined);
});
