// A pending webhook delivery keeps its body (the signed JSON sent on every attempt) in history.db, not in
// sql.js, whose WebAssembly memory never shrinks: a receiver down for the account's retry window (24 h by
// default) let every reply pile up there, rate x window x reply size. The body is read back for each
// attempt byte for byte, survives the sweep of unreferenced bodies at open, and goes to the history
// maintenance's trash once delivered. Rows written before keep their body inline and are sent as before.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { WebhookOutbox, deliveryInfo } from '../../src/channels/webhooks/outbox';
import { nullLogger } from '../../src/log/logger';
import type { WebhookAccount } from '../../src/protocol';
import { MIGRATIONS, openStore, type Store } from '../../src/store/index';
import { tempDir } from '../helpers/store-utils';
import { waitFor } from '../helpers/temp';
import { startWebhookReceiver } from '../helpers/webhook-receiver';

const SECRET = 'delivery-bodies-secret-0123456789';
/** A reply this big per delivery; the bodies of all pending ones together are megabytes. */
const BIG = 200_000;
const PENDING = 16;
const FAST = { retryBaseMs: 60_000, retryMaxMs: 60_000, timeoutMs: 2_000 };

type Closer = { after: (fn: () => Promise<void>) => void };

async function storeIn(t: Closer): Promise<{ dir: string; store: Store }> {
  const { dir, cleanup } = await tempDir('delivery-bodies-');
  const store = await openStore(dir);
  t.after(async () => {
    await store.close().catch(() => {});
    await cleanup();
  });
  return { dir, store };
}

/** A webhook message `m-<tag>` accepted into a new conversation `c-<tag>`, waiting in the inbox. */
async function acceptOne(store: Store, tag: string, url: string, now: number): Promise<void> {
  const accepted = await store.webhooks.accept({
    account: 'acct',
    source: 'webhook:acct',
    url,
    newConversation: { id: `c-${tag}`, title: tag },
    message: { id: `m-${tag}`, content: `question ${tag}` },
    now,
    idempotencyMs: 60_000,
  });
  assert.equal(accepted.kind, 'accepted');
}

/** A webhook message accepted, admitted and answered: its reply's delivery pending with `body`. */
async function pendingReply(store: Store, tag: string, body: string, url = 'http://127.0.0.1:9/out'): Promise<string> {
  const now = Date.now();
  await acceptOne(store, tag, url, now);
  await store.webhooks.admit(`m-${tag}`);
  const reply = { id: `r-${tag}`, conversation_id: `c-${tag}`, role: 'assistant' as const, content: `reply ${tag}`, timestamp: new Date(now).toISOString() };
  await store.webhooks.answer(`m-${tag}`, reply, { id: `d-${tag}`, account: 'acct', url, body, now, give_up_ms: now + 86_400_000 });
  return `d-${tag}`;
}

/** A distinct big reply body, as the inbox makes it. */
const bigBody = (tag: string) => JSON.stringify({ message: `${tag} ${'y'.repeat(BIG)}`, conversation_id: `c-${tag}` });

/** The bytes of sql.js's database (its pages), what its WebAssembly memory must hold. */
function sqlBytes(store: Store): number {
  const pages = store.db.get<{ page_count: number }>('PRAGMA page_count')!.page_count;
  const size = store.db.get<{ page_size: number }>('PRAGMA page_size')!.page_size;
  return pages * size;
}

/** A port nothing listens on: a receiver that is down. */
async function deadPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function outboxFor(t: Closer, store: Store, account: WebhookAccount): WebhookOutbox {
  const outbox = new WebhookOutbox({ store, accounts: () => new Map([['acct', account]]), logger: nullLogger, timings: FAST });
  t.after(() => outbox.stop(0));
  outbox.start();
  return outbox;
}

test('deliveries pending for a receiver that is down keep their bodies out of sql.js: its database does not grow by them', async (t) => {
  const { store } = await storeIn(t);
  const url = `http://127.0.0.1:${await deadPort()}/out`;
  // One first, so the tables' own pages are there before measuring.
  await pendingReply(store, 'warm', bigBody('warm'), url);
  const before = sqlBytes(store);
  for (let i = 0; i < PENDING; i++) await pendingReply(store, `p${i}`, bigBody(`p${i}`), url);
  outboxFor(t, store, { incoming_path: '/in', outgoing_url: url, secret: SECRET });
  // Each has been tried once and failed: pending, waiting for its next attempt.
  await waitFor(
    () => store.db.get<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending' AND attempts > 0")!.n === PENDING + 1 || undefined,
    'a failed attempt of each',
  );
  const grown = sqlBytes(store) - before;
  const bodies = PENDING * bigBody('p0').length;
  console.log(`sql.js grew by ${grown} bytes for ${PENDING} pending deliveries of ${bodies} bytes of bodies`);
  assert.ok(grown < bodies / 20, `sql.js grew by ${grown} bytes for ${bodies} bytes of pending bodies`);
  // Their bodies are read back whole for the next attempt.
  const row = store.webhooks.getDelivery('d-p3')!;
  assert.equal(await store.webhooks.deliveryBody(row), bigBody('p3'));
});

test('a pending delivery\u2019s body is not swept at the next open as unreferenced, and is sent byte for byte, signed', async (t) => {
  const { dir, cleanup } = await tempDir('delivery-bodies-');
  t.after(cleanup);
  const body = bigBody('swept');
  let store = await openStore(dir);
  await pendingReply(store, 'swept', body);
  await store.close();
  store = await openStore(dir);
  t.after(() => store.close());
  // The first pass after an open sweeps the keys given out since the last one that nothing refers to.
  await store.maintenance.run();
  assert.equal(await store.webhooks.deliveryBody(store.webhooks.getDelivery('d-swept')!), body);
  const receiver = await startWebhookReceiver({ secret: SECRET });
  t.after(() => receiver.close());
  outboxFor(t, store, { incoming_path: '/in', outgoing_url: receiver.url('/swept'), secret: SECRET });
  await receiver.waitFor((r) => r.processed.size === 1, 'the delivery');
  const [sent] = [...receiver.processed.values()];
  assert.equal(sent!.raw, body);
  assert.equal(sent!.signatureValid, true);
});

test('a delivered reply\u2019s body goes to the trash and the maintenance deletes it; its kind still reads reply', async (t) => {
  const { store } = await storeIn(t);
  const id = await pendingReply(store, 'done', bigBody('done'));
  const key = store.db.get<{ k: number }>('SELECT body_key AS k FROM webhook_deliveries WHERE id = ?', [id])!.k;
  assert.equal((await store.history.get([key])).size, 1);
  const now = Date.now();
  await store.webhooks.recordAttempt(id, { status: 'delivered', url: 'http://127.0.0.1:9/out', http_status: 200, error: null, next_attempt_ms: null, now });
  assert.equal(store.db.get<{ k: number | null }>('SELECT body_key AS k FROM webhook_deliveries WHERE id = ?', [id])!.k, null);
  await store.maintenance.run();
  assert.equal((await store.history.get([key])).size, 0, 'the body was deleted');
  assert.equal(deliveryInfo(store.webhooks.getDelivery(id)!).kind, 'reply');
});

test('rows written before (the body inline) are still delivered byte for byte after the upgrade, and list their kind as before', async (t) => {
  const { dir, cleanup } = await tempDir('delivery-bodies-');
  t.after(cleanup);
  // A data directory of the version before: its deliveries hold their body in the row.
  const old = await openStore(dir, { migrations: MIGRATIONS.slice(0, 20) });
  const now = Date.now();
  const reply = JSON.stringify({ message: 'an old reply \u00e9\u{1F600}', conversation_id: 'c-old' });
  const error = JSON.stringify({ status: 'error', error: 'an old failure', conversation_id: 'c-old', message_id: 'm-old' });
  await old.db.write((tx) => {
    for (const [id, body] of [
      ['d-old-reply', reply],
      ['d-old-error', error],
    ]) {
      tx.run(
        `INSERT INTO webhook_deliveries (id, account, url, conversation_id, message_id, body, status, created_at, next_attempt_ms, give_up_ms)
         VALUES (?, 'acct', 'http://127.0.0.1:9/out', 'c-old', 'm-old', ?, 'pending', ?, ?, ?)`,
        [id, body, new Date(now).toISOString(), now, now + 86_400_000],
      );
    }
  });
  await old.close();
  const store = await openStore(dir);
  t.after(() => store.close());
  assert.deepEqual(
    store.webhooks.listDeliveries({ limit: 10 }).map((row) => [row.id, deliveryInfo(row).kind]),
    [
      ['d-old-error', 'error'],
      ['d-old-reply', 'reply'],
    ],
  );
  const receiver = await startWebhookReceiver({ secret: SECRET });
  t.after(() => receiver.close());
  outboxFor(t, store, { incoming_path: '/in', outgoing_url: receiver.url('/old'), secret: SECRET });
  await receiver.waitFor((r) => r.processed.size === 2, 'both deliveries');
  assert.equal(receiver.processed.get('d-old-reply')!.raw, reply);
  assert.equal(receiver.processed.get('d-old-error')!.raw, error);
  for (const sent of receiver.processed.values()) assert.equal(sent.signatureValid, true);
  await waitFor(() => store.webhooks.countDeliveries('delivered') === 2 || undefined, 'both recorded delivered');
  assert.deepEqual(
    store.webhooks.listDeliveries({ limit: 10 }).map((row) => deliveryInfo(row).kind),
    ['error', 'reply'],
  );
});

test('a delivery whose body history.db lost is failed with that reason, never sent with something else', async (t) => {
  const { store } = await storeIn(t);
  const receiver = await startWebhookReceiver({ secret: SECRET });
  t.after(() => receiver.close());
  const id = await pendingReply(store, 'lost', bigBody('lost'), receiver.url('/lost'));
  const key = store.webhooks.getDelivery(id)!.body_key!;
  // As a damaged history.db would: the body is gone.
  assert.equal(await store.history.remove([key]), 1);
  outboxFor(t, store, { incoming_path: '/in', outgoing_url: receiver.url('/lost'), secret: SECRET });
  const failed = await waitFor(() => (store.webhooks.getDelivery(id)!.status === 'failed' ? store.webhooks.getDelivery(id) : undefined), 'the delivery failed');
  assert.match(failed.last_error ?? '', /body is missing/);
  assert.equal(receiver.requests.length, 0, 'nothing was sent');
});

/**
 * The history worker refusing every put (as a full disk for history.db does), until the returned
 * function is called: the bodies sent meanwhile are owed (history-store.ts), written with the next put.
 */
function refusePuts(store: Store): () => void {
  const history = store.history as unknown as { call: (request: { op: string }) => Promise<unknown> };
  const call = history.call.bind(history);
  history.call = (request) => (request.op === 'put' ? Promise.reject(new Error('SQLITE_FULL: database or disk is full (refused by the test)')) : call(request));
  return () => {
    history.call = call;
  };
}

test('history.db refusing writes loses no reply: the reply, its answered inbox row and its delivery are stored, and the delivery is sent byte for byte once history.db takes writes again', async (t) => {
  const { dir, cleanup } = await tempDir('delivery-bodies-');
  t.after(cleanup);
  let store = await openStore(dir);
  t.after(() => store.close().catch(() => {}));
  const now = Date.now();
  const url = 'http://127.0.0.1:9/out';
  for (const tag of ['ok', 'err']) await acceptOne(store, tag, url, now);
  await store.webhooks.admit('m-ok');
  const body = bigBody('refused');
  const errorBody = JSON.stringify({ status: 'error', error: 'over budget', message_id: 'm-err' });
  const takeWritesAgain = refusePuts(store);
  const reply = { id: 'r-ok', conversation_id: 'c-ok', role: 'assistant' as const, content: 'the reply', timestamp: new Date(now).toISOString() };
  await store.webhooks.answer('m-ok', reply, { id: 'd-ok', account: 'acct', url, body, now, give_up_ms: now + 86_400_000 });
  await store.webhooks.failWithCallback('m-err', 'over budget', { id: 'd-err', account: 'acct', url, body: errorBody, now, give_up_ms: now + 86_400_000, conversation_id: 'c-err' });
  assert.equal(store.webhooks.getInbox('m-ok')!.status, 'answered');
  assert.equal(store.webhooks.getInbox('m-err')!.status, 'failed');
  assert.equal((await store.messages.get('r-ok'))?.content, 'the reply', 'the reply is stored (its body owed)');
  // Read from memory meanwhile (owed bodies).
  assert.equal(await store.webhooks.deliveryBody(store.webhooks.getDelivery('d-ok')!), body);
  assert.equal(await store.webhooks.deliveryBody(store.webhooks.getDelivery('d-err')!), errorBody);
  takeWritesAgain();
  // The next write sends the owed bodies first.
  await store.messages.append({ id: 'later', conversation_id: 'c-ok', role: 'user', content: 'space is back', timestamp: new Date(now + 1).toISOString() });
  assert.equal(await store.problem(), null);
  await store.close();
  store = await openStore(dir);
  await store.maintenance.run();
  assert.equal((await store.messages.get('r-ok'))?.content, 'the reply');
  const receiver = await startWebhookReceiver({ secret: SECRET });
  t.after(() => receiver.close());
  outboxFor(t, store, { incoming_path: '/in', outgoing_url: receiver.url('/back'), secret: SECRET });
  await receiver.waitFor((r) => r.processed.size === 2, 'both deliveries');
  assert.deepEqual([...receiver.processed.values()].map((sent) => sent.raw).sort(), [body, errorBody].sort());
  assert.ok([...receiver.processed.values()].every((sent) => sent.signatureValid));
  assert.equal(receiver.requests.length, 2, 'each sent once');
});
