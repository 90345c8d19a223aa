import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { type RecordedRequest } from '../helpers/fake-openai';
import { cutPost, postJson, startService, writeConfig, type RunningService } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { waitFor } from '../helpers/temp';
import { signStandardWebhook, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

const SECRET_A = 'alpha-shared-secret-0123456789';
const SECRET_B = `whsec_${randomBytes(24).toString('base64')}`;
const FAST = { retryBaseMs: 50, retryMaxMs: 500, timeoutMs: 1_000 };

let alpha: WebhookReceiver;
let beta: WebhookReceiver;
let open: WebhookReceiver;

function accounts() {
  return {
    alpha: { incoming_path: '/hooks/alpha', outgoing_url: alpha.url('/alpha'), secret: SECRET_A, model: 'alpha-model' },
    beta: { incoming_path: '/hooks/beta', outgoing_url: beta.url('/beta'), secret: SECRET_B },
    open: { incoming_path: '/hooks/open', outgoing_url: open.url('/open') },
  };
}

const svc = useService({
  config: async () => {
    alpha = await startWebhookReceiver({ secret: SECRET_A });
    beta = await startWebhookReceiver({ secret: SECRET_B });
    open = await startWebhookReceiver();
    // Object form of channels.
    return { channels: { webhook: { accounts: accounts() } } };
  },
  options: { webhook: FAST },
});
after(async () => {
  await alpha?.close();
  await beta?.close();
  await open?.close();
});

type Accepted = { conversation_id: string; message_id: string };

function hook(s: RunningService, path: string, body: unknown, headers: Record<string, string> = {}) {
  return postJson(`${s.httpUrl}${path}`, body, headers);
}

async function accepted(s: RunningService, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Accepted> {
  const reply = await hook(s, path, body, headers);
  assert.equal(reply.status, 202, reply.text);
  assert.equal(reply.body!.status, 'ok');
  return reply.body!.data as Accepted;
}

function chatRequestsWith(text: string): RecordedRequest[] {
  return svc.fake.requests.filter((r) => r.path === '/v1/chat/completions' && JSON.stringify(r.body?.messages ?? []).includes(text));
}

function callbacksFor(receiver: WebhookReceiver, conversationId: string) {
  return receiver.requests.filter((r) => r.body?.conversation_id === conversationId);
}

async function command(s: RunningService, frame: Record<string, unknown>) {
  const client = await TestClient.authed(s.wsUrl, s.token);
  try {
    return await client.request(frame);
  } finally {
    client.close();
  }
}

/** Counts that must not move when a request is refused. */
function snapshot(s: RunningService) {
  return {
    messages: s.service.store.messages.count(),
    deliveries: s.service.store.webhooks.countDeliveries(),
    provider: svc.fake.requests.length,
    callbacks: alpha.requests.length + beta.requests.length + open.requests.length,
  };
}

describe('incoming webhook, happy path', () => {
  test('202 with ids once stored; the reply is POSTed to outgoing_url with secret and a valid signature', async () => {
    const data = await accepted(svc, '/hooks/alpha', { message: 'hello there', user_id: 'user-17' }, { 'x-service-secret': SECRET_A });
    assert.ok(data.conversation_id && data.message_id);
    // The 202 means the inbox holds it; the message joins its conversation when its turn is admitted (body in history.db first).
    const stored = await waitFor(() => svc.service.store.messages.get(data.message_id), 'the message admitted');
    assert.equal(stored.user_id, 'user-17', 'user_id is stored with the message');
    assert.equal(svc.service.store.conversations.get(data.conversation_id)?.source, 'webhook:alpha');

    await alpha.waitFor((r) => callbacksFor(r, data.conversation_id).length === 1, 'the callback');
    const [callback] = callbacksFor(alpha, data.conversation_id);
    assert.equal(callback.path, '/alpha');
    assert.deepEqual(JSON.parse(callback.raw), { message: 'echo: hello there', conversation_id: data.conversation_id });
    assert.match(String(callback.headers['content-type']), /^application\/json/);
    assert.equal(callback.headers['x-service-secret'], SECRET_A);
    assert.equal(callback.signatureValid, true, 'signature verified by the receiver');
    assert.ok(callback.headers['webhook-id']);
    assert.ok(Math.abs(Number(callback.headers['webhook-timestamp']) - Date.now() / 1000) < 30);

    // The account's model overrides the default for its chats.
    const [providerRequest] = chatRequestsWith('hello there');
    assert.equal(providerRequest.body.model, 'alpha-model');

    const reply = (await svc.service.store.messages.recent(data.conversation_id)).at(-1)!;
    assert.equal(reply.role, 'assistant');
    assert.equal(reply.content, 'echo: hello there');
  });

  test('conversation_id continues the conversation; without it a new one starts without history', async () => {
    const secret = { 'x-service-secret': SECRET_A };
    const first = await accepted(svc, '/hooks/alpha', { message: 'my name is Ada' }, secret);
    await alpha.waitFor((r) => callbacksFor(r, first.conversation_id).length === 1, 'first callback');

    const second = await accepted(svc, '/hooks/alpha', { message: 'what is my name?', conversation_id: first.conversation_id }, secret);
    assert.equal(second.conversation_id, first.conversation_id);
    await alpha.waitFor((r) => callbacksFor(r, first.conversation_id).length === 2, 'second callback');
    const [continued] = chatRequestsWith('what is my name?');
    const contents = withoutNote(continued.body.messages as { role: string; content: string }[]).map((m) => `${m.role}:${m.content}`);
    assert.deepEqual(contents.slice(-3), ['user:my name is Ada', 'assistant:echo: my name is Ada', 'user:what is my name?']);

    const fresh = await accepted(svc, '/hooks/alpha', { message: 'a fresh start' }, secret);
    assert.notEqual(fresh.conversation_id, first.conversation_id);
    await alpha.waitFor((r) => callbacksFor(r, fresh.conversation_id).length === 1, 'fresh callback');
    const [request] = chatRequestsWith('a fresh start');
    const history = withoutNote(request.body.messages as { role: string; content: string }[]).filter((m) => m.role !== 'system');
    assert.deepEqual(history, [{ role: 'user', content: 'a fresh start' }], 'no history from other conversations');
  });

  test('an account without secret accepts requests and sends no secret headers', async () => {
    const data = await accepted(svc, '/hooks/open', { message: 'no secret here' });
    await open.waitFor((r) => callbacksFor(r, data.conversation_id).length === 1, 'callback');
    const [callback] = callbacksFor(open, data.conversation_id);
    assert.equal(callback.headers['x-service-secret'], undefined);
    assert.equal(callback.headers['webhook-signature'], undefined);
    assert.ok(callback.headers['webhook-id']);
    // Its model is the default one.
    assert.equal(chatRequestsWith('no secret here')[0].body.model, 'gpt-4o-mini');
  });

  test('list_deliveries shows deliveries with attempts; filters by account and status', async () => {
    const all = await command(svc, { type: 'list_deliveries' });
    assert.equal(all.status, 'ok');
    const deliveries = (all.data as { deliveries: Record<string, unknown>[] }).deliveries;
    assert.ok(deliveries.length >= 4);
    const latest = deliveries[0];
    for (const field of [
      'id',
      'account',
      'receiver',
      'conversation_id',
      'message_id',
      'status',
      'attempts',
      'created_at',
      'next_attempt_at',
      'give_up_at',
      'last_attempt_at',
      'last_status',
      'last_error',
      'finished_at',
    ]) {
      assert.ok(field in latest, field);
    }
    assert.equal(latest.receiver, `http://127.0.0.1:${open.port}`, 'only the origin of the URL is shown');
    const onlyAlpha = await command(svc, { type: 'list_deliveries', account: 'alpha', status: 'delivered', limit: 2 });
    const rows = (onlyAlpha.data as { deliveries: { id: string; account: string; status: string; attempts: number; last_status: number }[] }).deliveries;
    assert.equal(rows.length, 2);
    for (const row of rows) assert.deepEqual([row.account, row.status, row.attempts, row.last_status], ['alpha', 'delivered', 1, 200]);
    const bad = await command(svc, { type: 'list_deliveries', status: 'lost' });
    assert.equal(bad.code, 'invalid_request');
    const missing = await command(svc, { type: 'retry_delivery', delivery_id: randomUUID() });
    assert.equal(missing.code, 'not_found');
    const delivered = await command(svc, { type: 'retry_delivery', delivery_id: rows[0].id });
    assert.equal(delivered.code, 'invalid_request');
  });
});

describe('incoming webhook, credentials', () => {
  test('missing or wrong secret: 401, nothing stored, nothing delivered', async () => {
    const before = snapshot(svc);
    const cases: Record<string, string>[] = [{}, { 'x-service-secret': 'wrong-secret-0123456789' }, { 'x-service-secret': SECRET_A.slice(0, -1) }, { 'x-service-secret': SECRET_B }];
    for (const headers of cases) {
      const reply = await hook(svc, '/hooks/alpha', { message: 'let me in' }, headers);
      assert.equal(reply.status, 401, JSON.stringify(headers));
      assert.equal(reply.body!.code, 'invalid_token');
      assert.ok(!String(reply.body!.error).includes(SECRET_A));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(snapshot(svc), before);
    const log = await readFile(join(svc.dataDir, 'service.log'), 'utf8');
    assert.match(log, /webhook\.refused/);
    assert.ok(!log.includes(SECRET_A) && !log.includes(SECRET_B), 'no secret in the log');
  });

  test('a Standard Webhooks signature is accepted instead of the header; stale or wrong ones are 401', async () => {
    const raw = JSON.stringify({ message: 'signed hello' });
    const now = Math.floor(Date.now() / 1000);
    const signed = (id: string, timestamp: number, secret = SECRET_B, body = raw) => ({
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signStandardWebhook(secret, id, timestamp, body),
    });
    const data = await accepted(svc, '/hooks/beta', raw, signed('msg_1', now));
    await beta.waitFor((r) => callbacksFor(r, data.conversation_id).length === 1, 'beta callback');
    const [callback] = callbacksFor(beta, data.conversation_id);
    assert.equal(callback.signatureValid, true, 'the callback is signed with the whsec_ key');
    assert.equal(callback.headers['x-service-secret'], SECRET_B);

    // A signature over the plain-text secret also works for an account whose secret is not whsec_.
    const plain = await accepted(svc, '/hooks/alpha', raw, signed('msg_2', now, SECRET_A));
    await alpha.waitFor((r) => callbacksFor(r, plain.conversation_id).length === 1, 'alpha callback');

    const before = snapshot(svc);
    const refused: [string, Record<string, string>][] = [
      ['stale timestamp', signed('msg_3', now - 6 * 60)],
      ['future timestamp', signed('msg_4', now + 6 * 60)],
      ['wrong key', signed('msg_5', now, SECRET_A)],
      ['other body', signed('msg_6', now, SECRET_B, JSON.stringify({ message: 'something else' }))],
      ['garbage signature', { ...signed('msg_7', now), 'webhook-signature': 'v1,AAAA' }],
      ['not a number', { ...signed('msg_8', now), 'webhook-timestamp': 'yesterday' }],
      ['no signature', { 'webhook-id': 'msg_9', 'webhook-timestamp': String(now) }],
    ];
    for (const [what, headers] of refused) {
      const reply = await hook(svc, '/hooks/beta', raw, headers);
      assert.equal(reply.status, 401, what);
      assert.equal(reply.body!.code, 'invalid_token', what);
    }
    const stale = await hook(svc, '/hooks/beta', raw, signed('msg_10', now - 6 * 60));
    assert.match(String(stale.body!.error), /5 minutes/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(snapshot(svc).messages, before.messages);
  });
});

describe('incoming webhook, validation', () => {
  test('bad content type, JSON, fields: 400; 2 MiB: 413; nothing stored', async () => {
    const before = snapshot(svc);
    const secret = { 'x-service-secret': SECRET_A };
    const cases: [unknown, Record<string, string>, number, string, RegExp][] = [
      ['{"message": "unterminated', secret, 400, 'invalid_request', /JSON/],
      [[{ message: 'in an array' }], secret, 400, 'invalid_request', /object/],
      [{ user_id: 'u' }, secret, 400, 'invalid_request', /message/],
      [{ message: 42 }, secret, 400, 'invalid_request', /message/],
      [{ message: '' }, secret, 400, 'invalid_request', /message/],
      [{ message: 'hi', user_id: 7 }, secret, 400, 'invalid_request', /user_id/],
      [{ message: 'hi', conversation_id: 7 }, secret, 400, 'invalid_request', /conversation_id/],
      [{ message: 'hi' }, { ...secret, 'content-type': 'text/plain' }, 400, 'invalid_request', /Content-Type/],
      [{ message: 'hi' }, { ...secret, 'idempotency-key': 'x'.repeat(300) }, 400, 'invalid_request', /Idempotency-Key/],
      [JSON.stringify({ message: 'x'.repeat(2 * 1024 * 1024) }), secret, 413, 'payload_too_large', /exceeds/],
    ];
    for (const [body, headers, status, code, pattern] of cases) {
      const reply = await hook(svc, '/hooks/alpha', body, headers);
      const what = JSON.stringify(body).slice(0, 40);
      assert.equal(reply.status, status, what);
      assert.equal(reply.body!.code, code, what);
      assert.match(String(reply.body!.error), pattern, what);
    }
    assert.deepEqual(snapshot(svc), before);
  });

  test('a 2 MiB chunked body (no Content-Length) is refused with 413 too', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    const stream = new ReadableStream({
      pull(controller) {
        if (sent >= 2 * 1024 * 1024) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const response = await fetch(`${svc.httpUrl}/hooks/open`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    assert.equal(response.status, 413);
    assert.equal((await response.json()).code, 'payload_too_large');
  });

  test('other methods on a webhook path, and unknown paths, are 404', async () => {
    assert.equal((await fetch(`${svc.httpUrl}/hooks/alpha`)).status, 404);
    assert.equal((await hook(svc, '/hooks/nobody', { message: 'hi' })).status, 404);
  });
});

describe('incoming webhook, conversations and idempotency', () => {
  test("another account's or the editor's conversation_id is 404, and nothing is stored", async () => {
    const mine = await accepted(svc, '/hooks/open', { message: 'open conversation' });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const chat = await client.request({ type: 'chat', message: 'from a LAN client' });
    client.close();
    const lanConversation = (chat.data as { conversation_id: string }).conversation_id;
    await open.waitFor((r) => callbacksFor(r, mine.conversation_id).length === 1, 'open callback');

    const before = snapshot(svc);
    for (const conversation_id of [mine.conversation_id, lanConversation, randomUUID()]) {
      const reply = await hook(svc, '/hooks/alpha', { message: 'not yours', conversation_id }, { 'x-service-secret': SECRET_A });
      assert.equal(reply.status, 404);
      assert.equal(reply.body!.code, 'not_found');
    }
    assert.deepEqual(snapshot(svc), before);
    // The user's own LAN client, by contrast, may read the webhook conversation (see the next test).
    const other = await command(svc, { type: 'get_messages', conversation_id: mine.conversation_id });
    assert.equal(other.status, 'ok');
  });

  test('the same Idempotency-Key twice answers the first result: one message, one agent run, one delivery', async () => {
    const headers = { 'x-service-secret': SECRET_A, 'idempotency-key': `order-${randomUUID()}` };
    const body = { message: 'charge the card once' };
    const [a, b] = await Promise.all([accepted(svc, '/hooks/alpha', body, headers), accepted(svc, '/hooks/alpha', body, headers)]);
    const c = await accepted(svc, '/hooks/alpha', body, headers);
    assert.deepEqual(a, b);
    assert.deepEqual(a, c);
    await alpha.waitFor((r) => callbacksFor(r, a.conversation_id).length === 1, 'the one callback');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(callbacksFor(alpha, a.conversation_id).length, 1);
    assert.equal(chatRequestsWith('charge the card once').length, 1);
    assert.equal(svc.service.store.messages.count(a.conversation_id), 2);
    // The same key on another account is another request.
    const elsewhere = await accepted(svc, '/hooks/open', body, { 'idempotency-key': headers['idempotency-key'] });
    assert.notEqual(elsewhere.conversation_id, a.conversation_id);
  });

  test('messages of one conversation are answered one at a time, in arrival order', async () => {
    const secret = { 'x-service-secret': SECRET_A };
    const first = await accepted(svc, '/hooks/alpha', { message: 'order 0' }, secret);
    await alpha.waitFor((r) => callbacksFor(r, first.conversation_id).length === 1, 'first callback');
    const seen = svc.fake.requests.length;
    svc.fake.script({ text: 'reply 1', delayMs: 150 }, { text: 'reply 2', delayMs: 150 }, { text: 'reply 3', delayMs: 150 });
    for (const message of ['order 1', 'order 2', 'order 3']) await accepted(svc, '/hooks/alpha', { message, conversation_id: first.conversation_id }, secret);
    await alpha.waitFor((r) => callbacksFor(r, first.conversation_id).length === 4, 'all callbacks', 5_000);
    const runs = svc.fake.requests.slice(seen).filter((r) => JSON.stringify(r.body?.messages).includes('order 1'));
    assert.equal(runs.length, 3);
    for (let i = 1; i < runs.length; i += 1) assert.ok(runs[i].receivedAt - runs[i - 1].receivedAt >= 140, 'the next run starts after the previous reply');
    // Each run sees the conversation as it stood: earlier turns answered, later messages not yet in it.
    assert.deepEqual(
      runs.map((r) =>
        withoutNote(r.body.messages as { role: string; content: string }[])
          .filter((m) => m.role !== 'system')
          .map((m) => m.content),
      ),
      [
        ['order 0', 'echo: order 0', 'order 1'],
        ['order 0', 'echo: order 0', 'order 1', 'reply 1', 'order 2'],
        ['order 0', 'echo: order 0', 'order 1', 'reply 1', 'order 2', 'reply 2', 'order 3'],
      ],
    );
    const stored = (await svc.service.store.messages.recent(first.conversation_id)).map((m) => m.content);
    assert.deepEqual(stored, ['order 0', 'echo: order 0', 'order 1', 'reply 1', 'order 2', 'reply 2', 'order 3', 'reply 3']);
    const replies = (await svc.service.store.messages.recent(first.conversation_id)).filter((m) => m.role === 'assistant').map((m) => m.content);
    assert.deepEqual(
      callbacksFor(alpha, first.conversation_id).map((c) => c.body?.message),
      replies,
    );
  });

  test("the user's own clients see webhook conversations; a webhook sees only its account's", async () => {
    const secret = { 'x-service-secret': SECRET_A };
    const hook = await accepted(svc, '/hooks/alpha', { message: 'visible to the editor' }, secret);
    await alpha.waitFor((r) => callbacksFor(r, hook.conversation_id).length === 1, 'callback');
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const list = (await client.request({ type: 'list_conversations', limit: 500 })).data as { conversations: { id: string; source: string }[] };
    assert.equal(list.conversations.find((c) => c.id === hook.conversation_id)?.source, 'webhook:alpha');
    const history = (await client.request({ type: 'get_messages', conversation_id: hook.conversation_id })).data as { messages: { content: string }[] };
    assert.deepEqual(
      history.messages.map((m) => m.content),
      ['visible to the editor', 'echo: visible to the editor'],
    );
    const own = await client.request({ type: 'chat', message: 'from the LAN' });
    const intrusion = await postJson(`${svc.httpUrl}/hooks/alpha`, { message: 'x', conversation_id: (own.data as { conversation_id: string }).conversation_id }, secret);
    assert.equal(intrusion.status, 404);
    client.close();
  });

  test("a signed request sent again with the same webhook-id is answered once (the sender's retry); so is one replayed with an Idempotency-Key added or changed: the signed webhook-id decides", async () => {
    const raw = JSON.stringify({ message: 'signed once' });
    const now = Math.floor(Date.now() / 1000);
    const id = `msg_${randomUUID()}`;
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(now), 'webhook-signature': signStandardWebhook(SECRET_B, id, now, raw) };
    const first = await accepted(svc, '/hooks/beta', raw, headers);
    const again = await accepted(svc, '/hooks/beta', raw, headers);
    assert.deepEqual(again, first);
    // A captured request replayed within its 5 minutes: headers outside the signature are the replayer's to write.
    assert.deepEqual(await accepted(svc, '/hooks/beta', raw, { ...headers, 'idempotency-key': 'replay-1' }), first);
    assert.deepEqual(await accepted(svc, '/hooks/beta', raw, { ...headers, 'idempotency-key': 'replay-2' }), first);
    await beta.waitFor((r) => callbacksFor(r, first.conversation_id).length === 1, 'callback');
    assert.equal(chatRequestsWith('signed once').length, 1, 'the agent ran once');
  });
});

describe('incoming webhook, rate limit', () => {
  test('200 requests in a minute on one account: 120 accepted, the rest 429 with Retry-After; another account unaffected', async () => {
    const receiver = await startWebhookReceiver();
    const limited = await startService(
      {
        base_url: svc.fake.url,
        channels: {
          webhook: {
            accounts: {
              busy: { incoming_path: '/busy', outgoing_url: receiver.url('/busy'), secret: SECRET_A },
              quiet: { incoming_path: '/quiet', outgoing_url: receiver.url('/quiet'), secret: SECRET_A },
            },
          },
        },
      },
      { webhook: FAST },
    );
    try {
      const headers = { 'x-service-secret': SECRET_A };
      const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => hook(limited, '/busy', { message: `burst ${i}` }, headers)));
      const statuses = replies.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 202).length, 120);
      assert.equal(statuses.filter((s) => s === 429).length, 80);
      for (const reply of replies.filter((r) => r.status === 429)) {
        assert.equal(reply.body!.code, 'rate_limited');
        const retryAfter = Number(reply.headers.get('retry-after'));
        assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      }
      const quiet = await hook(limited, '/quiet', { message: 'still welcome' }, headers);
      assert.equal(quiet.status, 202);
      await receiver.waitFor((r) => r.processed.size === 121, '121 callbacks', 30_000);
      assert.equal(receiver.duplicates(), 0);
    } finally {
      await limited.dispose();
      await receiver.close();
    }
  });
});

describe('incoming webhook, requests without the secret', () => {
  test("they do not use up the account's 120 a minute: the sender with the secret still gets in; signed forgeries past the limit are refused before their body is read", async () => {
    const receiver = await startWebhookReceiver();
    const guarded = await startService(
      { base_url: svc.fake.url, channels: { webhook: { accounts: { guarded: { incoming_path: '/guarded', outgoing_url: receiver.url('/guarded'), secret: SECRET_A } } } } },
      { webhook: FAST },
    );
    try {
      // Anyone who knows (or guesses) the path, without the secret: 130 tries in the minute.
      const forged = await Promise.all(Array.from({ length: 130 }, (_, i) => hook(guarded, '/guarded', { message: `forged ${i}` }, { 'x-service-secret': `wrong-${i}-0123456789` })));
      const sender = await hook(guarded, '/guarded', { message: 'the real sender' }, { 'x-service-secret': SECRET_A });
      assert.equal(sender.status, 202, `the sender with the secret: ${sender.text}`);
      const statuses = forged.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 401).length, 120, 'the first 120 are told their secret is wrong');
      assert.equal(statuses.filter((s) => s === 429).length, 10, 'the rest are limited, per address');
      await receiver.waitFor((r) => r.processed.size === 1, 'the real sender answered');

      // Signed forgeries (a fresh timestamp, any signature) make the service read their body to check it: past
      // the limit of their address they are refused before that.
      const now = Math.floor(Date.now() / 1000);
      const signedForgery = (i: number) => ({ 'webhook-id': `msg_forged_${i}`, 'webhook-timestamp': String(now), 'webhook-signature': `v1,${Buffer.alloc(32, i).toString('base64')}` });
      const signed = await Promise.all(Array.from({ length: 5 }, (_, i) => hook(guarded, '/guarded', { message: 'x'.repeat(1000) }, signedForgery(i))));
      assert.deepEqual([...new Set(signed.map((r) => r.status))], [429], 'this address is past 120 failures already');
      assert.equal(signed[0].body!.code, 'rate_limited');
      assert.equal(guarded.service.store.messages.count(), 2, 'only the real message (and its answer) stored');
    } finally {
      await guarded.dispose();
      await receiver.close();
    }
  });
});

describe('incoming webhook, signed forgeries in parallel', () => {
  /** Signed requests with a wrong signature, their headers sent and their bodies held back, each on its own connection. */
  async function forgeries(s: RunningService, count: number, bodyBytes: number, localAddress = '127.0.0.1') {
    const port = Number(new URL(s.httpUrl).port);
    const now = Math.floor(Date.now() / 1000);
    const sockets = await Promise.all(
      Array.from(
        { length: count },
        () =>
          new Promise<net.Socket>((resolve, reject) =>
            net
              .connect({ port, host: '127.0.0.1', localAddress })
              .once('connect', function (this: net.Socket) {
                resolve(this);
              })
              .once('error', reject),
          ),
      ),
    );
    const statuses = sockets.map((socket, i) => {
      let answered: number | undefined;
      const status = new Promise<number>((resolve) => {
        let text = '';
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString('latin1');
          const match = /^HTTP\/1\.1 (\d+)/.exec(text);
          if (match) resolve((answered = Number(match[1])));
        });
        socket.on('error', () => resolve(-1));
        socket.on('close', () => resolve(-1));
      });
      socket.write(
        `POST /guarded HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n` +
          `webhook-id: msg_parallel_${i}\r\nwebhook-timestamp: ${now}\r\nwebhook-signature: v1,${Buffer.alloc(32, i).toString('base64')}\r\n\r\n`,
      );
      return { status, answered: () => answered };
    });
    return {
      /** Those answered before any of their body was sent. */
      answeredEarly: () => statuses.filter((s) => s.answered() !== undefined).length,
      /** Sends no body; resolves with each status once its connection is answered or dropped (-1). */
      finishWithoutBody(): Promise<number[]> {
        return Promise.all(statuses.map((s) => s.status));
      },
      /** Sends every body still wanted; resolves with each status. */
      async finish(): Promise<number[]> {
        const body = Buffer.from(JSON.stringify({ message: 'x'.repeat(bodyBytes - 16) }).padEnd(bodyBytes, ' '));
        sockets.forEach((socket, i) => statuses[i]!.answered() === undefined && socket.write(body));
        const all = await Promise.all(statuses.map((s) => s.status));
        for (const socket of sockets) socket.destroy();
        return all;
      },
    };
  }

  // 127.0.0.2 is let in too: a second client address on loopback.
  const guardedService = (webhook: Record<string, unknown>) =>
    startService(
      { base_url: svc.fake.url, channels: { webhook: { accounts: { guarded: { incoming_path: '/guarded', outgoing_url: 'http://127.0.0.1:9/unused', secret: SECRET_A } } } } },
      { webhook: { ...FAST, ...webhook }, allowFrom: ['127.0.0.1', '127.0.0.2'] },
    );
  const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

  test("from one address: only the limit's worth of bodies is read, the rest refused 429 before theirs; counted in one burst line", async () => {
    const guarded = await guardedService({ rateLimitPerMinute: 5, maxUnverifiedReadsPerAddress: 16 });
    try {
      const sent = await forgeries(guarded, 12, 64 * 1024);
      // Each failure is counted before its body is read: 7 are over the limit of 5 at once, unread.
      await waitFor(() => sent.answeredEarly() === 7, 'seven refused before their body', 10_000);
      const statuses = await sent.finish();
      assert.equal(count(statuses, 401), 5, 'five bodies read and found wrong');
      assert.equal(count(statuses, 429), 7);
      await guarded.stop();
      const lines = (await readFile(join(guarded.dataDir, 'service.log'), 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { event: string; count?: number; refused?: number; account?: string });
      assert.equal(lines.filter((l) => l.event === 'webhook.refused' && l.account === 'guarded').length, 1, 'the first failure is a line');
      assert.deepEqual(
        lines.filter((l) => l.event === 'webhook.refused_burst').map((l) => [l.account, l.count, l.refused]),
        [['guarded', 12, 7]],
        'the rest are counted in one',
      );
    } finally {
      await guarded.dispose();
    }
  });

  test('from any number of addresses: at most maxUnverifiedReads bodies of the account are read at once; the real sender gets in after', async () => {
    const guarded = await guardedService({ maxUnverifiedReads: 3, maxUnverifiedReadsPerAddress: 16 });
    try {
      const sent = await forgeries(guarded, 10, 64 * 1024);
      await waitFor(() => sent.answeredEarly() === 7, 'seven refused before their body', 10_000);
      const statuses = await sent.finish();
      assert.equal(count(statuses, 401), 3, 'three bodies read at once, found wrong');
      assert.equal(count(statuses, 429), 7);
      const body = { message: 'the real sender' };
      const now = Math.floor(Date.now() / 1000);
      const signature = signStandardWebhook(SECRET_A, 'msg_real', now, JSON.stringify(body));
      const real = await hook(guarded, '/guarded', body, { 'webhook-id': 'msg_real', 'webhook-timestamp': String(now), 'webhook-signature': signature });
      assert.equal(real.status, 202, real.text);
    } finally {
      await guarded.dispose();
    }
  });
  test("one address holding bodies back keeps at most maxUnverifiedReadsPerAddress of the account's reads; the real sender from another address gets in meanwhile", async () => {
    const guarded = await guardedService({});
    try {
      // 16 forgeries trickling nothing from 127.0.0.2: before, they took the account's 16 reads and the sender got 429.
      const sent = await forgeries(guarded, 16, 64 * 1024, '127.0.0.2');
      await waitFor(() => sent.answeredEarly() === 12, 'twelve refused before their body (four held)', 10_000);
      const body = { message: 'the real sender' };
      const now = Math.floor(Date.now() / 1000);
      const signature = signStandardWebhook(SECRET_A, 'msg_real_held', now, JSON.stringify(body));
      const real = await hook(guarded, '/guarded', body, { 'webhook-id': 'msg_real_held', 'webhook-timestamp': String(now), 'webhook-signature': signature });
      assert.equal(real.status, 202, real.text);
      const statuses = await sent.finish();
      assert.equal(count(statuses, 401), 4);
    } finally {
      await guarded.dispose();
    }
  });

  test('a signed body not sent within unverifiedReadMs is dropped and its read given back', async () => {
    const guarded = await guardedService({ maxUnverifiedReads: 1, unverifiedReadMs: 300 });
    try {
      const held = await forgeries(guarded, 1, 64 * 1024, '127.0.0.2');
      // Its read is given back once the deadline passes (the connection is dropped, never answered).
      const statuses = await Promise.race([held.finishWithoutBody(), new Promise<number[]>((resolve) => setTimeout(() => resolve([0]), 10_000))]);
      assert.deepEqual(statuses, [-1], 'the held request was dropped at its deadline');
      const body = { message: 'the real sender' };
      const now = Math.floor(Date.now() / 1000);
      const signature = signStandardWebhook(SECRET_A, 'msg_real_after', now, JSON.stringify(body));
      const real = await hook(guarded, '/guarded', body, { 'webhook-id': 'msg_real_after', 'webhook-timestamp': String(now), 'webhook-signature': signature });
      assert.equal(real.status, 202, real.text);
    } finally {
      await guarded.dispose();
    }
  });
  /** A signed request to /guarded whose connection is cut after half its body, signed with the secret or not (cutPost). */
  const cutSigned = (port: number, id: string, withSecret: boolean) => {
    const raw = JSON.stringify({ message: `cut ${id} ${'z'.repeat(2_000)}` });
    const now = Math.floor(Date.now() / 1000);
    const signature = withSecret ? signStandardWebhook(SECRET_A, id, now, raw) : `v1,${Buffer.alloc(32).toString('base64')}`;
    return cutPost(port, '/guarded', raw, raw.length >> 1, { 'webhook-id': id, 'webhook-timestamp': String(now), 'webhook-signature': signature });
  };
  /** The sender's whole signed request to /guarded. */
  const wholeSigned = (guarded: Awaited<ReturnType<typeof guardedService>>, id: string, message: string) => {
    const body = { message };
    const now = Math.floor(Date.now() / 1000);
    return hook(guarded, '/guarded', body, { 'webhook-id': id, 'webhook-timestamp': String(now), 'webhook-signature': signStandardWebhook(SECRET_A, id, now, JSON.stringify(body)) });
  };
  test('a signed body cut mid-way (the connection closed before Content-Length) is no wrong credential: it does not lock the sender out, and is not logged as a refused credential', async () => {
    const guarded = await guardedService({ rateLimitPerMinute: 3 });
    try {
      const port = Number(new URL(guarded.httpUrl).port);
      const before = guarded.service.store.messages.count();
      for (let i = 0; i < 3; i++) {
        const status = await cutSigned(port, `msg_cut_${i}`, true);
        assert.ok(status === -1 || (status >= 400 && status < 500 && status !== 401 && status !== 429), `a cut body answered ${status}`);
      }
      assert.equal(guarded.service.store.messages.count(), before, 'nothing stored from a cut body');
      // Three cuts, as many as the limit of 3 wrong credentials a minute (counted, they would lock the sender out): none counted.
      const whole = await wholeSigned(guarded, 'msg_whole', 'the sender, whole this time');
      assert.equal(whole.status, 202, whole.text);
      await guarded.stop();
      const events = (await readFile(join(guarded.dataDir, 'service.log'), 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { event: string; code?: string; path?: string; count?: number });
      const wrongCredential = events.filter((l) => l.event === 'webhook.refused_burst' || (l.event === 'webhook.refused' && l.code !== 'invalid_request'));
      assert.deepEqual(wrongCredential, [], 'a cut body is not logged as a wrong credential');
      assert.deepEqual(
        events.filter((l) => l.event === 'http.handler_failed'),
        [],
        'nor as an internal error',
      );
      // Each logged once as a body cut short: the first a line, all three counted in the window's line (at the stop).
      assert.equal(events.filter((l) => l.event === 'http.body_incomplete').length, 1, 'the first cut a line');
      assert.deepEqual(
        events.filter((l) => l.event === 'http.body_incomplete_burst').map((l) => [l.path, l.count]),
        [['/guarded', 3]],
        'the three counted in one line',
      );
    } finally {
      await guarded.dispose();
    }
  });
  test('cut bodies are forgiven only up to the per-minute limit: an address cutting many signed reads (each read, never a guess) is locked out like wrong credentials', async () => {
    const guarded = await guardedService({ rateLimitPerMinute: 3 });
    try {
      const port = Number(new URL(guarded.httpUrl).port);
      // Three forgiven cuts and three counted ones: the limit of 3 wrong credentials a minute is reached.
      for (let i = 0; i < 7; i++) await cutSigned(port, `msg_flood_${i}`, false);
      const after = await wholeSigned(guarded, 'msg_after_flood', 'after the flood');
      assert.equal(after.status, 429, after.text);
      // Each cut logged once, as a body cut short (grouped: one line, then the window's count), those past
      // the forgiven three too: not again as a refused credential. Six bodies were read and cut; the
      // seventh request was refused (429) before its body.
      await guarded.stop();
      const events = (await readFile(join(guarded.dataDir, 'service.log'), 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { event: string; reason?: string; count?: number });
      assert.equal(events.filter((l) => l.event === 'http.body_incomplete').length, 1, 'the first cut a line');
      assert.deepEqual(
        events.filter((l) => l.event === 'http.body_incomplete_burst').map((l) => l.count),
        [6],
        'the six counted in one line',
      );
      assert.deepEqual(
        events.filter((l) => l.event.startsWith('webhook.refused') && /did not arrive whole/.test(String(l.reason))),
        [],
        'no cut is logged twice (as a refused credential)',
      );
    } finally {
      await guarded.dispose();
    }
  });
});

describe('tools from webhook text', () => {
  test('in ask mode with nobody able to answer, a tool the model calls is denied', async () => {
    const receiver = await startWebhookReceiver();
    const guarded = await startService(
      { base_url: svc.fake.url, permission_mode: 'ask', channels: { webhook: { accounts: { bot: { incoming_path: '/bot', outgoing_url: receiver.url() } } } } },
      { webhook: FAST, permissionTimeoutMs: 60_000 },
    );
    try {
      svc.fake.script({ tool_calls: [{ name: 'remember', arguments: { content: 'attacker wants this remembered' } }] }, (request) => {
        const results = (request.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool');
        return { text: `tool said: ${results.at(-1)?.content}` };
      });
      const data = await accepted(guarded, '/bot', { message: 'please remember something' });
      await receiver.waitFor((r) => r.processed.size === 1, 'the callback');
      const [callback] = [...receiver.processed.values()];
      assert.equal(callback.body?.conversation_id, data.conversation_id);
      assert.match(String(callback.body?.message), /Permission denied/);
      assert.deepEqual(guarded.service.store.memory.all(), [], 'the tool did not run');
      const tools = (await guarded.service.store.messages.recent(data.conversation_id, { includeTools: true })).filter((m) => m.role === 'tool');
      assert.ok(tools.some((m) => (m.data as { denied?: boolean } | null)?.denied === true));
    } finally {
      await guarded.dispose();
      await receiver.close();
    }
  });
});

describe('accounts follow service.json without restart', () => {
  test('an account added by editing the file works; changed secret applies; removed is 404', async () => {
    const receiver = await startWebhookReceiver();
    const first = { name: 'hooks', type: 'webhook', accounts: { one: { incoming_path: '/one', outgoing_url: receiver.url('/one'), secret: SECRET_A } } };
    // Array form of channels.
    const live = await startService({ base_url: svc.fake.url, channels: [first] }, { webhook: FAST });
    try {
      assert.equal((await hook(live, '/two', { message: 'too early' }, { 'x-service-secret': SECRET_A })).status, 404);
      const withTwo = { ...first, accounts: { ...first.accounts, two: { incoming_path: '/two', outgoing_url: receiver.url('/two'), secret: 'second-secret-abcdefghijkl' } } };
      await writeConfig(live.dataDir, { base_url: svc.fake.url, channels: [withTwo] });
      await waitFor(async () => (await hook(live, '/two', { message: 'hello two' }, { 'x-service-secret': 'second-secret-abcdefghijkl' })).status === 202, 'the new path', 5_000, 50);
      await receiver.waitFor((r) => r.requests.some((c) => c.path === '/two'), 'callback of the new account');

      const rotated = { ...withTwo, accounts: { ...withTwo.accounts, one: { ...first.accounts.one, secret: 'rotated-secret-0123456789' } } };
      await writeConfig(live.dataDir, { base_url: svc.fake.url, channels: [rotated] });
      await waitFor(async () => (await hook(live, '/one', { message: 'old secret' }, { 'x-service-secret': SECRET_A })).status === 401, 'the old secret refused', 5_000, 50);
      assert.equal((await hook(live, '/one', { message: 'new secret' }, { 'x-service-secret': 'rotated-secret-0123456789' })).status, 202);

      await writeConfig(live.dataDir, { base_url: svc.fake.url, channels: [{ ...rotated, accounts: { one: rotated.accounts.one } }] });
      await waitFor(async () => (await hook(live, '/two', { message: 'gone?' }, { 'x-service-secret': 'second-secret-abcdefghijkl' })).status === 404, 'the removed path', 5_000, 50);
      assert.equal((await hook(live, '/one', { message: 'still here' }, { 'x-service-secret': 'rotated-secret-0123456789' })).status, 202);
    } finally {
      await live.dispose();
      await receiver.close();
    }
  });
});
