// conversation.deleted (docs/protocol.md, "Events"): a conversation deleted by a person on one client, or by
// the history's retention, is dropped by every other client that may see it (before s31 their lists kept it
// until they listed again, and opening it answered not_found). Real parts: the service in process on
// 127.0.0.1, WebSocket clients, a real data directory.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServiceEvent } from '../../src/protocol';
import { openStore } from '../../src/store/index';
import { withService } from '../helpers/service-fixture';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 90_000 };
const DAY = 86_400_000;
const deletedEvent = (id: string) => (f: Record<string, unknown>) => f.event === 'conversation.deleted' && f.conversation_id === id;

test('a conversation deleted on one client is dropped by the others: conversation.deleted, by user', LIMIT, async (t) => {
  const svc = await withService(t, { config: { model: 'fake-model' } });
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(() => {
    phone.close();
    editor.close();
  });
  const tapped: { event: ServiceEvent; filter: (session: never) => boolean }[] = [];
  t.after(svc.service.events.observe((event, filter) => tapped.push({ event, filter: filter as never })));
  const id = ((await phone.request({ type: 'chat', message: 'delete me later' })).data as { conversation_id: string }).conversation_id;
  const deleted = await phone.request({ type: 'delete_conversation', conversation_id: id });
  assert.equal(deleted.status, 'ok');
  assert.deepEqual(await editor.next(deletedEvent(id)), { event: 'conversation.deleted', conversation_id: id, by: 'user' });
  // Who may see it: the user clients, not a webhook account (it sees only its own conversations).
  const seen = tapped.find((e) => e.event.event === 'conversation.deleted');
  assert.ok(seen, 'broadcast');
  assert.equal(seen.filter({ id: 'x', source: { kind: 'webhook', account: 'alpha' }, canAnswerPermissions: false, send: () => undefined } as never), false);
  // A second delete (already gone) tells no one again.
  assert.equal((await phone.request({ type: 'delete_conversation', conversation_id: id })).code, 'not_found');
  assert.equal(tapped.filter((e) => e.event.event === 'conversation.deleted').length, 1);
});

test('a conversation retention deletes is dropped by every client: conversation.deleted, by retention', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('ra-conversation-deleted-');
  t.after(cleanup);
  const old = Date.now() - 60 * DAY;
  const store = await openStore(dir);
  await store.conversations.create({ id: 'old', title: 'old', source: 'ws', created_at: new Date(old).toISOString() });
  await store.messages.appendMany([{ id: 'old-1', conversation_id: 'old', role: 'user', content: 'an old message', timestamp: new Date(old).toISOString() }]);
  await store.close();

  const svc = await withService(t, { config: { model: 'fake-model' }, options: { dataDir: dir } });
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(() => client.close());
  const listed = await client.request({ type: 'list_conversations' });
  assert.deepEqual(
    (listed.data as { conversations: { id: string }[] }).conversations.map((c) => c.id),
    ['old'],
  );
  svc.service.store.maintenance.setPolicy({ maxDays: 30 });
  await svc.service.store.maintenance.run();
  assert.deepEqual(await client.next(deletedEvent('old')), { event: 'conversation.deleted', conversation_id: 'old', by: 'retention' });
  assert.equal((await client.request({ type: 'get_messages', conversation_id: 'old' })).code, 'not_found');
});

test('a listener that throws on a retired conversation stops neither the deletion nor the rest of the pass', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('ra-retired-throws-');
  t.after(cleanup);
  const old = new Date(Date.now() - 60 * DAY).toISOString();
  const store = await openStore(dir);
  t.after(() => store.close());
  for (const id of ['old-a', 'old-b']) await store.conversations.create({ id, title: id, source: 'ws', created_at: old });
  const told: string[] = [];
  store.maintenance.onRetired(({ id }) => {
    told.push(id);
    throw new Error('a listener failed');
  });
  store.maintenance.setPolicy({ maxDays: 30 });
  await store.maintenance.run();
  assert.deepEqual(told.sort(), ['old-a', 'old-b'], 'each retired conversation told');
  assert.deepEqual(store.conversations.list({ limit: 10 }), [], 'both deleted');
});
