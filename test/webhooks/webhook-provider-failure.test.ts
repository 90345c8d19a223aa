/**
 * "Accepted" means answered eventually (docs/protocol.md; issue 15 item 4): a webhook
 * message taken with 202 while the provider fails is retried (5xx, connection refused, 429) or answered
 * with a signed error callback (401, a request the provider refuses), both listed by list_deliveries,
 * across a restart. Real service, fake OpenAI server, real receiver.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, startService, TEST_API_KEY, type RunningService } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { waitFor } from '../helpers/temp';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';

const SECRET = 'provider-failure-secret-0123456789';
const FAST = { retryBaseMs: 50, retryMaxMs: 500, timeoutMs: 1_000 };

let receiver: WebhookReceiver;

function account(extra: Record<string, unknown> = {}) {
  return { incoming_path: '/hooks/alpha', outgoing_url: receiver.url('/alpha'), secret: SECRET, ...extra };
}

const svc = useService({
  config: async () => {
    receiver = await startWebhookReceiver({ secret: SECRET });
    return { channels: { webhook: { accounts: { alpha: account() } } } };
  },
  options: { webhook: FAST },
});
after(() => receiver?.close());

type Accepted = { conversation_id: string; message_id: string };

async function accepted(s: RunningService, body: Record<string, unknown>): Promise<Accepted> {
  const reply = await postJson(`${s.httpUrl}/hooks/alpha`, body, { 'x-service-secret': SECRET });
  assert.equal(reply.status, 202, reply.text);
  return reply.body!.data as Accepted;
}

function callbacksFor(conversationId: string) {
  return receiver.requests.filter((r) => r.body?.conversation_id === conversationId);
}

function chatRequestsWith(provider: FakeOpenAI, text: string) {
  return provider.requests.filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.body?.messages ?? []).includes(text));
}

async function deliveriesOf(s: RunningService, conversationId: string) {
  const client = await TestClient.authed(s.wsUrl, s.token);
  try {
    const reply = await client.request({ type: 'list_deliveries', limit: 500 });
    assert.equal(reply.status, 'ok');
    return (reply.data as { deliveries: Record<string, unknown>[] }).deliveries.filter((d) => d.conversation_id === conversationId);
  } finally {
    client.close();
  }
}

/** Lets any duplicate callback arrive before counting. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 400));

describe('transient provider failures are retried', () => {
  test('500 four times, then 200: the turn is retried and one reply is delivered, exactly once', async () => {
    svc.fake.script({ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 });
    const data = await accepted(svc, { message: 'survive the outage' });
    await receiver.waitFor(() => callbacksFor(data.conversation_id).length >= 1, 'the reply', 20_000);
    await settle();
    const callbacks = callbacksFor(data.conversation_id);
    assert.equal(callbacks.length, 1, 'one callback');
    assert.deepEqual(callbacks[0].body, { message: 'echo: survive the outage', conversation_id: data.conversation_id });
    assert.equal(callbacks[0].signatureValid, true);
    assert.equal(chatRequestsWith(svc.fake, 'survive the outage').length, 5, 'four failed provider calls, then the answer');
    const replies = (await svc.service.store.messages.recent(data.conversation_id)).filter((m) => m.role === 'assistant');
    assert.deepEqual(
      replies.map((m) => m.content),
      ['echo: survive the outage'],
      'one reply stored',
    );
    const deliveries = await deliveriesOf(svc, data.conversation_id);
    assert.equal(deliveries.length, 1);
    assert.equal(deliveries[0].status, 'delivered');
    assert.equal(deliveries[0].kind, 'reply');
    assert.equal(svc.service.store.webhooks.getInbox(data.message_id)?.status, 'answered');
  });

  test("429 with Retry-After: the turn's next try waits as long as the provider asked", async () => {
    const limited = { status: 429, retryAfter: 1 };
    svc.fake.script(limited, limited, limited);
    const data = await accepted(svc, { message: 'rate limited for a second' });
    await receiver.waitFor(() => callbacksFor(data.conversation_id).length >= 1, 'the reply', 20_000);
    await settle();
    assert.deepEqual(
      callbacksFor(data.conversation_id).map((c) => c.body?.message),
      ['echo: rate limited for a second'],
    );
    const calls = chatRequestsWith(svc.fake, 'rate limited for a second');
    assert.equal(calls.length, 4, 'three refused calls (one turn), then the retried turn');
    // The inbox's own backoff is 50 ms here: the second turn waited for Retry-After (1 s) instead.
    assert.ok(calls[3].receivedAt - calls[2].receivedAt >= 950, `retried after ${calls[3].receivedAt - calls[2].receivedAt} ms`);
  });

  test('a message arriving while an earlier one of its conversation waits to be retried is answered after it', async () => {
    const slow = await startService({ base_url: svc.fake.url, channels: { webhook: { accounts: { alpha: account() } } } }, { webhook: { ...FAST, retryBaseMs: 1_500, retryMaxMs: 3_000 } });
    try {
      const first = await accepted(slow, { message: 'first in line' });
      await receiver.waitFor(() => callbacksFor(first.conversation_id).length === 1, 'the first reply');
      const seen = svc.fake.requests.length;
      svc.fake.script({ status: 500 }, { status: 500 }, { status: 500 });
      const second = await accepted(slow, { message: 'second in line', conversation_id: first.conversation_id });
      await svc.fake.waitFor((requests) => requests.length >= seen + 3, 10_000);
      const third = await accepted(slow, { message: 'third in line', conversation_id: first.conversation_id });
      await receiver.waitFor(() => callbacksFor(first.conversation_id).length >= 3, 'the later replies', 20_000);
      await settle();
      assert.deepEqual(
        callbacksFor(first.conversation_id).map((c) => c.body?.message),
        ['echo: first in line', 'echo: second in line', 'echo: third in line'],
      );
      assert.deepEqual(
        (await slow.service.store.messages.recent(first.conversation_id)).map((m) => m.content),
        ['first in line', 'echo: first in line', 'second in line', 'echo: second in line', 'third in line', 'echo: third in line'],
        'the third message joined the conversation only after the second was answered',
      );
      assert.equal(slow.service.store.webhooks.getInbox(third.message_id)?.status, 'answered');
      assert.equal(slow.service.store.webhooks.getInbox(second.message_id)?.status, 'answered');
    } finally {
      await slow.dispose();
    }
  });

  test('provider down (connection refused), then up at the same address: answered once', async () => {
    const gone = await startFakeOpenAI();
    const port = gone.port;
    await gone.close();
    const down = await startService({ base_url: `http://127.0.0.1:${port}/v1`, channels: { webhook: { accounts: { alpha: account() } } } }, { webhook: FAST });
    let back: FakeOpenAI | undefined;
    try {
      const data = await accepted(down, { message: 'anyone there?' });
      await waitFor(async () => (await readFile(join(down.dataDir, 'service.log'), 'utf8')).includes('webhook.answer_retry'), 'a retry planned', 15_000);
      assert.equal(callbacksFor(data.conversation_id).length, 0);
      back = await startFakeOpenAI({ port });
      await receiver.waitFor(() => callbacksFor(data.conversation_id).length >= 1, 'the reply', 20_000);
      await settle();
      assert.deepEqual(
        callbacksFor(data.conversation_id).map((c) => c.body?.message),
        ['echo: anyone there?'],
      );
    } finally {
      await down.dispose();
      await back?.close();
    }
  });

  test('a message waiting for the provider survives a restart and is answered once it is back', async () => {
    const gone = await startFakeOpenAI();
    const port = gone.port;
    await gone.close();
    const config = { base_url: `http://127.0.0.1:${port}/v1`, channels: { webhook: { accounts: { alpha: account() } } } };
    const first = await startService(config, { webhook: FAST });
    let second: RunningService | undefined;
    let back: FakeOpenAI | undefined;
    try {
      const data = await accepted(first, { message: 'across a restart' });
      await waitFor(async () => (await readFile(join(first.dataDir, 'service.log'), 'utf8')).includes('webhook.answer_retry'), 'a retry planned', 15_000);
      await first.stop();
      back = await startFakeOpenAI({ port });
      second = await startService(config, { webhook: FAST, dataDir: first.dataDir, keepConfig: true });
      await receiver.waitFor(() => callbacksFor(data.conversation_id).length >= 1, 'the reply', 20_000);
      await settle();
      assert.deepEqual(
        callbacksFor(data.conversation_id).map((c) => c.body?.message),
        ['echo: across a restart'],
      );
    } finally {
      await second?.stop();
      await first.dispose();
      await back?.close();
    }
  });
});

describe('permanent provider failures are answered with an error callback', () => {
  test('401: a signed error callback with clean text, not retried, listed as an error delivery', async () => {
    svc.fake.script({ status: 401 });
    const data = await accepted(svc, { message: 'with a revoked key' });
    await receiver.waitFor(() => callbacksFor(data.conversation_id).length >= 1, 'the error callback', 15_000);
    await settle();
    const callbacks = callbacksFor(data.conversation_id);
    assert.equal(callbacks.length, 1);
    const [callback] = callbacks;
    assert.equal(callback.signatureValid, true, 'signed like any reply');
    assert.equal(callback.headers['x-service-secret'], SECRET);
    const body = callback.body as Record<string, unknown>;
    assert.equal(body.status, 'error');
    assert.equal(body.conversation_id, data.conversation_id);
    assert.equal(body.message_id, data.message_id);
    assert.equal(body.error, "the model provider refused the assistant's credentials (HTTP 401)");
    assert.ok(!callback.raw.includes(TEST_API_KEY) && !callback.raw.includes(TEST_API_KEY.slice(0, 8)), 'no part of the key');
    assert.match(String(svc.service.store.webhooks.getInbox(data.message_id)?.error), /authentication failed \(HTTP 401\)/, 'the detail is kept for the owner');
    assert.equal(chatRequestsWith(svc.fake, 'with a revoked key').length, 1, 'a 401 is not retried');
    const deliveries = await deliveriesOf(svc, data.conversation_id);
    assert.equal(deliveries.length, 1);
    assert.deepEqual([deliveries[0].kind, deliveries[0].status], ['error', 'delivered']);
    assert.equal(svc.service.store.webhooks.getInbox(data.message_id)?.status, 'failed');
  });

  test("a 404 (unknown model) is permanent too; the sender is not told the provider's address or text", async () => {
    svc.fake.script({ status: 404 });
    const data = await accepted(svc, { message: 'a request it refuses' });
    await receiver.waitFor(() => callbacksFor(data.conversation_id).length >= 1, 'the error callback', 15_000);
    await settle();
    const [callback] = callbacksFor(data.conversation_id);
    assert.deepEqual(callback.body, {
      status: 'error',
      error: 'the model provider refused the request (HTTP 404)',
      conversation_id: data.conversation_id,
      message_id: data.message_id,
    });
    assert.ok(!callback.raw.includes(`127.0.0.1:${svc.fake.port}`) && !callback.raw.includes('fake-missing'), 'no base URL, no vendor text');
    assert.match(String(svc.service.store.webhooks.getInbox(data.message_id)?.error), new RegExp(`127\\.0\\.0\\.1:${svc.fake.port}`), 'the owner keeps the detail');
    assert.equal(chatRequestsWith(svc.fake, 'a request it refuses').length, 1);
  });

  test('still failing when the retry window is over: an error callback says it gave up', async () => {
    const broken = await startFakeOpenAI();
    broken.setDefault({ status: 503 });
    // 5 s: one turn's attempt is three requests with the provider's own backoff between them (about 1.5 s);
    // in a 2 s window a loaded machine fit only one attempt (exactly 3 requests), and the check below failed.
    const s = await startService({ base_url: broken.url, channels: { webhook: { accounts: { alpha: account({ retry_for_seconds: 5 }) } } } }, { webhook: FAST });
    try {
      const data = await accepted(s, { message: 'never answered' });
      await receiver.waitFor(() => callbacksFor(data.conversation_id).length >= 1, 'the error callback', 20_000);
      await settle();
      const callbacks = callbacksFor(data.conversation_id);
      assert.equal(callbacks.length, 1);
      const body = callbacks[0].body as Record<string, unknown>;
      assert.equal(body.status, 'error');
      assert.match(String(body.error), /gave up/);
      assert.match(String(body.error), /HTTP 503/);
      assert.ok(chatRequestsWith(broken, 'never answered').length > 3, 'the turn was retried before giving up');
      assert.equal(s.service.store.webhooks.getInbox(data.message_id)?.status, 'failed');
    } finally {
      await s.dispose();
      await broken.close();
    }
  });
});
