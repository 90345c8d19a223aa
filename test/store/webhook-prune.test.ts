// The webhook channel's hourly sweep (channels/webhooks/channel.ts) forgets finished rows after a while.
// It deleted only delivered deliveries and answered inbox rows: a receiver that is down for good (or
// answers 410) left a failed delivery, and a provider that refuses every turn a failed inbox row and a
// failed error callback, for every message a sender posts, for ever. Failed ones are kept long enough
// to be seen (list_deliveries) and sent again (retry_delivery), then deleted with their bodies; a
// delivery that is still retrying, or was retried by hand, is never deleted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore, type Store } from '../../src/store/index';
import { tempDir } from '../helpers/store-utils';

const DAY = 24 * 60 * 60_000;
const URL = 'http://127.0.0.1:9/out';

async function storeIn(t: { after: (fn: () => Promise<void>) => void }): Promise<Store> {
  const { dir, cleanup } = await tempDir('webhook-prune-');
  const store = await openStore(dir);
  t.after(async () => {
    await store.close().catch(() => {});
    await cleanup();
  });
  return store;
}

async function accept(store: Store, tag: string, now: number): Promise<void> {
  const accepted = await store.webhooks.accept({
    account: 'acct',
    source: 'webhook:acct',
    url: URL,
    newConversation: { id: `c-${tag}`, title: tag },
    message: { id: `m-${tag}`, content: `question ${tag}` },
    now,
    idempotencyMs: 60_000,
  });
  assert.equal(accepted.kind, 'accepted');
}

/** A message answered at `now`: its reply's delivery `d-<tag>` pending. */
async function answered(store: Store, tag: string, now: number): Promise<string> {
  await accept(store, tag, now);
  await store.webhooks.admit(`m-${tag}`);
  const reply = { id: `r-${tag}`, conversation_id: `c-${tag}`, role: 'assistant' as const, content: `reply ${tag}`, timestamp: new Date(now).toISOString() };
  const body = JSON.stringify({ message: `reply ${tag}`, conversation_id: `c-${tag}` });
  await store.webhooks.answer(`m-${tag}`, reply, { id: `d-${tag}`, account: 'acct', url: URL, body, now, give_up_ms: now + DAY });
  return `d-${tag}`;
}

const attempt = (status: 'pending' | 'failed', now: number) => ({
  status,
  url: URL,
  http_status: status === 'failed' ? 410 : 503,
  error: status === 'failed' ? 'gone' : 'unavailable',
  next_attempt_ms: status === 'pending' ? now + 60_000 : null,
  now,
});

const cutoffs = (now: number) => ({ idempotencyBeforeMs: now - DAY, inboxBeforeMs: now - DAY, deliveredBeforeMs: now - 7 * DAY, failedBeforeMs: now - 30 * DAY });

test('failed deliveries and failed inbox rows are pruned after the cutoff, with their bodies; recent, retrying and retried ones are kept', async (t) => {
  const store = await storeIn(t);
  const now = Date.now();
  const old = now - 40 * DAY;

  // Failed for good 40 days ago (a receiver that answered 410): past the cutoff.
  const gone = await answered(store, 'gone', old);
  await store.webhooks.recordAttempt(gone, attempt('failed', old));
  const goneKey = store.webhooks.getDelivery(gone)!.body_key;
  assert.notEqual(goneKey, null);
  // Failed yesterday: still to be seen and retried.
  const recent = await answered(store, 'recent', now - DAY);
  await store.webhooks.recordAttempt(recent, attempt('failed', now - DAY));
  // Created 40 days ago and still retrying (pending): never pruned.
  const retrying = await answered(store, 'retrying', old);
  await store.webhooks.recordAttempt(retrying, attempt('pending', old));
  // Failed 40 days ago, then sent again by hand (retry_delivery): pending, never pruned.
  const retried = await answered(store, 'retried', old);
  await store.webhooks.recordAttempt(retried, attempt('failed', old));
  await store.webhooks.retryDelivery(retried, now, now + DAY);
  // A message the provider refused 40 days ago: its inbox row failed, its error callback failed too.
  await accept(store, 'refused', old);
  const callback = { id: 'd-refused', account: 'acct', url: URL, body: '{"status":"error"}', now: old, give_up_ms: old + DAY, conversation_id: 'c-refused' };
  await store.webhooks.failWithCallback('m-refused', 'refused', callback);
  await store.webhooks.recordAttempt('d-refused', attempt('failed', old));

  const removed = await store.webhooks.prune(cutoffs(now));

  assert.equal(store.webhooks.getDelivery(gone), undefined, 'a delivery failed 40 days ago is pruned');
  assert.equal(store.webhooks.getDelivery('d-refused'), undefined, 'an error callback failed 40 days ago is pruned');
  assert.equal(store.webhooks.getInbox('m-refused'), undefined, 'an inbox row failed 40 days ago is pruned');
  assert.equal(store.webhooks.getDelivery(recent)?.status, 'failed', 'a delivery failed yesterday stays visible');
  assert.equal(store.webhooks.getDelivery(retrying)?.status, 'pending', 'a delivery still retrying is kept');
  assert.equal(store.webhooks.getDelivery(retried)?.status, 'pending', 'a delivery retried by hand is kept');
  assert.ok(removed >= 3, `removed ${removed} rows`);
  // The pruned delivery's body goes to the history maintenance's trash, as a delivered one's does.
  const trashed = store.db.get<{ n: number }>('SELECT count(*) AS n FROM history_trash WHERE body_key = ?', [goneKey]);
  assert.equal(trashed?.n, 1, 'the pruned body is in history_trash');
  await store.maintenance.run();
  assert.equal(await store.messages.bodyText(goneKey!).catch(() => undefined), undefined, 'the maintenance deleted the pruned body');
  // The kept ones still send their bodies.
  assert.match((await store.webhooks.deliveryBody(store.webhooks.getDelivery(recent)!)) ?? '', /reply recent/);
});
