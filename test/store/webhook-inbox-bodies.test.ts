// Issue 20: a webhook message waiting in the inbox keeps its body in history.db, not in sql.js (which
// holds its whole database in memory): unauthenticated posts to an account without a secret filled it,
// a body kept there for a day after its answer. The body passes to the message when admitted, and goes
// to the history maintenance's trash when the message fails before it (never answered, never run again).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore, type Store } from '../../src/store/index';
import { tempDir } from '../helpers/store-utils';
import { waitFor } from '../helpers/temp';
import { deliveryInfo } from '../../src/channels/webhooks/outbox';

const BIG = 'first line of a big message\n' + 'x'.repeat(200_000);

async function withStore(t: { after: (fn: () => Promise<void>) => void }): Promise<Store> {
  const { dir, cleanup } = await tempDir('inbox-bodies-');
  const store = await openStore(dir);
  t.after(async () => {
    await store.close();
    await cleanup();
  });
  return store;
}

async function accepted(store: Store, id: string): Promise<string> {
  const result = await store.webhooks.accept({
    account: 'open',
    source: 'webhook:open',
    url: 'http://127.0.0.1:9/out',
    newConversation: { id: `c-${id}`, title: 'big' },
    message: { id, content: BIG },
    now: Date.now(),
    idempotencyMs: 60_000,
  });
  assert.equal(result.kind, 'accepted');
  return result.conversation_id;
}

const inboxRow = (store: Store, id: string) => store.db.get<{ content: string; body_key: number | null }>('SELECT content, body_key FROM webhook_inbox WHERE message_id = ?', [id])!;

test('an accepted message: sql.js keeps its preview, history.db its body, which becomes the message\u2019s when admitted', async (t) => {
  const store = await withStore(t);
  const conversationId = await accepted(store, 'm1');
  const waiting = inboxRow(store, 'm1');
  assert.equal(waiting.content, 'first line of a big message');
  assert.equal(store.webhooks.inboxPreview('m1'), 'first line of a big message');
  assert.notEqual(waiting.body_key, null);
  await store.webhooks.admit('m1');
  const [message] = await store.messages.recent(conversationId);
  assert.equal(message!.content, BIG);
  assert.equal(inboxRow(store, 'm1').body_key, null, 'the body is the message\u2019s now');
  assert.equal(store.db.get<{ k: number }>('SELECT body_key AS k FROM messages WHERE id = ?', ['m1'])!.k, waiting.body_key);
  // Admitting again (a turn run again after a crash) changes nothing.
  await store.webhooks.admit('m1');
  assert.equal((await store.messages.recent(conversationId)).length, 1);
});

test('a message that fails before it is admitted: its body goes to the trash, and the maintenance deletes it', async (t) => {
  const store = await withStore(t);
  const conversationId = await accepted(store, 'm2');
  const key = inboxRow(store, 'm2').body_key!;
  await store.webhooks.failWithCallback('m2', 'over budget', {
    id: 'd2',
    account: 'open',
    url: 'http://127.0.0.1:9/out',
    body: '{"status":"error"}',
    now: Date.now(),
    give_up_ms: Date.now() + 60_000,
    conversation_id: conversationId,
  });
  assert.equal(inboxRow(store, 'm2').body_key, null);
  await store.maintenance.run();
  assert.equal((await store.history.get([key])).size, 0, 'the body was deleted');
});

test('a refused message (a conversation of another account) leaves no body behind', async (t) => {
  const store = await withStore(t);
  const before = (await store.history.stats()).maxKey;
  const result = await store.webhooks.accept({
    account: 'open',
    source: 'webhook:open',
    url: 'http://127.0.0.1:9/out',
    conversationId: 'not-there',
    newConversation: { id: 'unused', title: 'big' },
    message: { id: 'm3', content: BIG },
    now: Date.now(),
    idempotencyMs: 60_000,
  });
  assert.equal(result.kind, 'not_found');
  // The body was stored first, then given back (in the background).
  await waitFor(async () => {
    const after = (await store.history.stats()).maxKey;
    return (after > before ? await store.history.keysBetween(before + 1, after) : []).length === 0 || undefined;
  }, 'no body left behind');
});

test('a delivered reply lets go of its body (its kind still reads reply); a pending one keeps it to send again', async (t) => {
  const store = await withStore(t);
  const conversationId = await accepted(store, 'm4');
  await store.webhooks.admit('m4');
  const now = Date.now();
  const body = JSON.stringify({ message: BIG, conversation_id: conversationId });
  const reply = { id: 'r4', conversation_id: conversationId, role: 'assistant' as const, content: BIG, timestamp: new Date(now).toISOString() };
  await store.webhooks.answer('m4', reply, { id: 'd4', account: 'open', url: 'http://127.0.0.1:9/out', body, now, give_up_ms: now + 60_000 });
  const attempt = { url: 'http://127.0.0.1:9/out', error: null, now };
  await store.webhooks.recordAttempt('d4', { ...attempt, status: 'pending', http_status: 503, next_attempt_ms: now + 1_000 });
  assert.equal(await store.webhooks.deliveryBody(store.webhooks.getDelivery('d4')!), body, 'still to be sent: kept');
  await store.webhooks.recordAttempt('d4', { ...attempt, status: 'delivered', http_status: 200, next_attempt_ms: null });
  assert.equal(await store.webhooks.deliveryBody(store.webhooks.getDelivery('d4')!), '');
  assert.equal(deliveryInfo(store.webhooks.getDelivery('d4')!).kind, 'reply');
});

test('a body waiting in the inbox across a restart is not swept as unreferenced: admitted after it, whole', async (t) => {
  const { dir, cleanup } = await tempDir('inbox-bodies-');
  t.after(cleanup);
  let store = await openStore(dir);
  const conversationId = await accepted(store, 'm5');
  await store.close();
  store = await openStore(dir);
  try {
    // The first pass after an open sweeps the keys given out since the last one that nothing refers to.
    await store.maintenance.run();
    await store.webhooks.admit('m5');
    assert.equal((await store.messages.recent(conversationId))[0]!.content, BIG);
  } finally {
    await store.close();
  }
});
