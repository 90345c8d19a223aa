import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, startService, writeConfig, type RunningService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { startWebhookReceiver, type ReceivedCallback } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';
import { backoffMs } from '../../src/channels/webhooks/outbox';

const SECRET = 'delivery-secret-0123456789abcdef';
/** Short backoff and attempt timeout so retries happen in milliseconds. */
const FAST = { retryBaseMs: 50, retryMaxMs: 400, timeoutMs: 300 };

type DeliveryInfo = {
  id: string;
  account: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  conversation_id: string;
};

let fake: FakeOpenAI;
const cleanups: (() => Promise<void>)[] = [];
before(async () => {
  fake = await startFakeOpenAI();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fake?.close();
});

/** A service with one account `acct` delivering to a fresh receiver. */
async function setup(account: Record<string, unknown> = {}, options = FAST) {
  const receiver = await startWebhookReceiver({ secret: SECRET });
  const config = (extra: Record<string, unknown> = {}) => ({
    base_url: fake.url,
    channels: { webhook: { accounts: { acct: { incoming_path: '/in', outgoing_url: receiver.url('/out'), secret: SECRET, ...account, ...extra } } } },
  });
  const svc = await startService(config(), { webhook: options });
  cleanups.push(async () => {
    await svc.dispose();
    await receiver.close();
  });
  return { receiver, svc, config };
}

async function send(svc: RunningService, message: string): Promise<{ conversation_id: string; message_id: string }> {
  const reply = await postJson(`${svc.httpUrl}/in`, { message }, { 'x-service-secret': SECRET });
  assert.equal(reply.status, 202, reply.text);
  return reply.body!.data as { conversation_id: string; message_id: string };
}

async function command(svc: RunningService, frame: Record<string, unknown>) {
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    return await client.request(frame);
  } finally {
    client.close();
  }
}

async function deliveries(svc: RunningService, filter: Record<string, unknown> = {}): Promise<DeliveryInfo[]> {
  const reply = await command(svc, { type: 'list_deliveries', ...filter });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return (reply.data as { deliveries: DeliveryInfo[] }).deliveries;
}

function ids(requests: ReceivedCallback[]): string[] {
  return requests.map((r) => String(r.headers['webhook-id']));
}

test('backoff doubles per failed attempt (its jitter never hides the growth) up to the cap', () => {
  const timings = { retryBaseMs: 50, retryMaxMs: 400 };
  const least = (attempts: number) => backoffMs(timings, attempts, () => 0);
  const most = (attempts: number) => backoffMs(timings, attempts, () => 0.999_999);
  assert.deepEqual([1, 2, 3, 4, 5].map(least), [50, 100, 200, 400, 400]);
  for (const attempts of [1, 2, 3]) {
    assert.ok(most(attempts) < 1.5 * least(attempts), `jitter under half the delay (attempt ${attempts})`);
    assert.ok(least(attempts + 1) > most(attempts), `the next attempt always waits longer (attempt ${attempts})`);
  }
  assert.equal(most(9), 400);
});

// The schedule itself is backoffMs's (above): measured gaps only show the order and the first delay,
// which a loaded machine can lengthen but never shorten.
test('receiver down for the first 3 tries: retried after the base delay, then delivered once, same webhook-id', async () => {
  const { receiver, svc } = await setup();
  receiver.script({ status: 503 }, { status: 500 }, { status: 502 });
  const data = await send(svc, 'retry me');
  await receiver.waitFor((r) => r.processed.size === 1, 'the delivery');
  assert.equal(receiver.requests.length, 4);
  assert.equal(new Set(ids(receiver.requests)).size, 1, 'webhook-id is stable across retries');
  for (const request of receiver.requests) {
    assert.equal(request.signatureValid, true);
    assert.deepEqual(request.body, { message: 'echo: retry me', conversation_id: data.conversation_id });
  }
  const gaps = receiver.requests.slice(1).map((r, i) => r.receivedAt - receiver.requests[i].receivedAt);
  assert.ok(gaps[0] >= 45, `first retry after the base delay (${gaps})`);
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(receiver.requests.length, 4, 'nothing after the 2xx');
  const [row] = await deliveries(svc);
  assert.deepEqual([row.status, row.attempts, row.last_status, row.next_attempt_at], ['delivered', 4, 200, null]);
  const log = await readFile(join(svc.dataDir, 'service.log'), 'utf8');
  assert.equal(log.match(/webhook\.delivery_retry/g)?.length, 3, 'each failed attempt is logged');
  assert.match(log, /webhook\.delivered/);
  assert.ok(!log.includes(SECRET), 'the secret is never logged');
});

test('410 stops retrying that delivery (failed) without disabling the account', async () => {
  const { receiver, svc } = await setup();
  receiver.script({ status: 410 });
  await send(svc, 'gone');
  await receiver.waitFor((r) => r.requests.length === 1, 'the attempt');
  await waitFor(async () => (await deliveries(svc))[0]?.status === 'failed', 'failed status');
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal(receiver.requests.length, 1, 'not retried');
  const [row] = await deliveries(svc, { status: 'failed' });
  assert.equal(row.last_status, 410);
  assert.match(String(row.last_error), /410/);

  await send(svc, 'next one');
  await receiver.waitFor((r) => r.processed.size === 1, 'the next delivery');
});

test('a hanging receiver times out and is retried', async () => {
  const { receiver, svc } = await setup();
  receiver.script({ hang: true });
  await send(svc, 'are you there');
  await receiver.waitFor((r) => r.processed.size === 1, 'the retry', 5_000);
  assert.equal(receiver.requests.length, 2);
  assert.equal(receiver.requests[0].answered, 'hang');
  assert.ok(receiver.requests[1].receivedAt - receiver.requests[0].receivedAt >= FAST.timeoutMs, 'retried after the timeout');
  const [row] = await deliveries(svc);
  assert.deepEqual([row.status, row.attempts], ['delivered', 2]);
});

test("a receiver's Retry-After is honoured", async () => {
  const { receiver, svc } = await setup();
  receiver.script({ status: 429, retryAfter: 1 });
  await send(svc, 'slow down');
  await receiver.waitFor((r) => r.processed.size === 1, 'the retry', 5_000);
  const gap = receiver.requests[1].receivedAt - receiver.requests[0].receivedAt;
  assert.ok(gap >= 950, `waited ${gap} ms, Retry-After asked 1 s (backoff alone would be ~50 ms)`);
});

test('retry_for_seconds over: failed, visible in list_deliveries; retry_delivery sends it again', async () => {
  const { receiver, svc } = await setup({ retry_for_seconds: 1 });
  receiver.setDefault({ status: 503 });
  await send(svc, 'doomed at first');
  await waitFor(async () => (await deliveries(svc, { account: 'acct', status: 'failed' })).length === 1, 'give-up', 5_000, 50);
  const [failed] = await deliveries(svc, { account: 'acct', status: 'failed' });
  assert.ok(failed.attempts >= 3, `attempts ${failed.attempts}`);
  assert.equal(failed.last_status, 503);
  assert.match(String(failed.last_error), /gave up after \d+ attempts: HTTP 503/);
  assert.equal(failed.next_attempt_at, null);
  const attemptsSeen = receiver.requests.length;
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(receiver.requests.length, attemptsSeen, 'no attempt after giving up');
  assert.deepEqual(await deliveries(svc, { status: 'pending' }), []);

  receiver.setDefault({ status: 200 });
  const retried = await command(svc, { type: 'retry_delivery', delivery_id: failed.id });
  assert.equal(retried.status, 'ok');
  assert.equal((retried.data as { delivery: DeliveryInfo }).delivery.status, 'pending');
  await receiver.waitFor((r) => r.processed.has(failed.id), 'the manual retry');
  const [done] = await deliveries(svc);
  assert.deepEqual([done.id, done.status, done.last_status], [failed.id, 'delivered', 200]);
  assert.equal(done.attempts, failed.attempts + 1);
});

test("a pending delivery whose account was removed still goes to the stored URL (unsigned), and it's logged", async () => {
  const { receiver, svc } = await setup();
  receiver.setDefault({ status: 503 });
  await send(svc, 'orphan');
  await receiver.waitFor((r) => r.requests.length >= 2, 'failed attempts');
  await writeConfig(svc.dataDir, { base_url: fake.url, channels: { webhook: { accounts: {} } } });
  await waitFor(async () => (await postJson(`${svc.httpUrl}/in`, { message: 'x' }, { 'x-service-secret': SECRET })).status === 404, 'account removed', 5_000, 50);
  receiver.setDefault({ status: 200 });
  await receiver.waitFor((r) => r.processed.size === 1, 'delivered to the stored URL', 5_000);
  const [delivered] = [...receiver.processed.values()];
  assert.equal(delivered.path, '/out');
  assert.equal(delivered.headers['x-service-secret'], undefined);
  assert.equal(delivered.headers['webhook-signature'], undefined);
  assert.match(await readFile(join(svc.dataDir, 'service.log'), 'utf8'), /webhook\.delivery_account_removed/);
});

test('a changed outgoing_url applies to pending deliveries', async () => {
  const { receiver, svc, config } = await setup();
  receiver.setDefault({ status: 503 });
  await send(svc, 'moving house');
  await receiver.waitFor((r) => r.requests.length >= 1, 'first attempt');
  const moved = await startWebhookReceiver({ secret: SECRET });
  cleanups.push(() => moved.close());
  const next = config({ outgoing_url: moved.url('/new') });
  await writeConfig(svc.dataDir, next);
  await moved.waitFor((r) => r.processed.size === 1, 'delivered to the new URL', 5_000);
  assert.equal([...moved.processed.values()][0].signatureValid, true);
});

test('pending deliveries survive a graceful stop and are sent after restart', async () => {
  const temp = await tempDir('ra-webhook-restart-');
  cleanups.push(temp.cleanup);
  const receiver = await startWebhookReceiver({ secret: SECRET });
  cleanups.push(() => receiver.close());
  receiver.setDefault({ status: 503 });
  const config = { base_url: fake.url, channels: { webhook: { accounts: { acct: { incoming_path: '/in', outgoing_url: receiver.url('/out'), secret: SECRET } } } } };
  const first = await startService(config, { dataDir: temp.dir, webhook: { ...FAST, retryBaseMs: 5_000 } });
  const data = await send(first, 'survive me');
  await receiver.waitFor((r) => r.requests.length === 1, 'first attempt');
  await first.stop();
  const seen = receiver.requests.length;
  assert.equal(seen, 1, 'stop did not wait for the next attempt (due 5 s after the first)');

  receiver.setDefault({ status: 200 });
  const second = await startService(config, { dataDir: temp.dir, keepConfig: true, webhook: { ...FAST, retryBaseMs: 5_000 } });
  cleanups.push(() => second.stop());
  assert.equal(receiver.requests.length, seen, 'nothing sent while stopped');
  // The stored next attempt time (about 5 s after the first try) is kept across the restart.
  await receiver.waitFor((r) => r.processed.size === 1, 'delivery after restart', 10_000);
  const [callback] = [...receiver.processed.values()];
  assert.equal(callback.body?.conversation_id, data.conversation_id);
  assert.equal(receiver.duplicates(), 0);
});

test('bounded concurrency: a hanging receiver does not hold up another account', async () => {
  const slow = await startWebhookReceiver();
  const quick = await startWebhookReceiver();
  slow.setDefault({ hang: true });
  const svc = await startService(
    {
      base_url: fake.url,
      channels: {
        webhook: {
          accounts: {
            slow: { incoming_path: '/slow', outgoing_url: slow.url() },
            quick: { incoming_path: '/quick', outgoing_url: quick.url() },
          },
        },
      },
    },
    { webhook: { ...FAST, timeoutMs: 2_000, concurrency: 4, perAccount: 2 } },
  );
  cleanups.push(async () => {
    await svc.dispose();
    await slow.close();
    await quick.close();
  });
  for (let i = 0; i < 5; i += 1) assert.equal((await postJson(`${svc.httpUrl}/slow`, { message: `slow ${i}` })).status, 202);
  await slow.waitFor((r) => r.requests.length === 2, 'two hanging attempts');
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(slow.requests.length, 2, 'at most perAccount attempts in flight for one account');
  assert.equal((await postJson(`${svc.httpUrl}/quick`, { message: 'quick one' })).status, 202);
  // Behind the slow account's hanging attempts it would wait for their 2 s timeout.
  await quick.waitFor((r) => r.processed.size === 1, 'quick delivery', 1_500);
});
