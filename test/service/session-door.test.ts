/**
 * One door for every client (src/commands/door.ts): LAN sockets after `auth`, relayed clients (the same
 * frame session), and the editor's own sessions (extension/backend.ts LocalBackend) come in through
 * `openSession`, so graceful stop (Service.stop) waits for the commands of all of them and then closes
 * every one, whichever transport carries it. A webhook account is a session too (its turns tracked in flight).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LocalBackend, type Envelope } from '../../src/extension/backend';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import type { RecordedRequest } from '../helpers/fake-http';
import { openStore } from '../../src/store';
import { postJson, startService } from '../helpers/service';
import { waitFor } from '../helpers/temp';
import { startWebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

let fake: FakeOpenAI;

before(async () => {
  fake = await startFakeOpenAI();
});
after(async () => {
  await fake?.close();
});

test('every client is a session of the door: the editor, its views and a LAN socket once authenticated; leaving closes it', async () => {
  const svc = await startService({ base_url: fake.url, model: 'fake-model' });
  try {
    assert.equal(svc.service.sessionCount, 0);
    const backend = new LocalBackend(svc.service);
    assert.equal(svc.service.sessionCount, 1, "the editor's own session (palette commands, prompts)");
    const view = backend.openViewChannel({ onResponse: () => undefined, onEvent: () => undefined });
    assert.equal(svc.service.sessionCount, 2, "the chat view's session");

    const client = await TestClient.connect(svc.wsUrl);
    assert.equal(svc.service.sessionCount, 2, 'a socket is not let in before it authenticates');
    assert.equal((await client.request({ type: 'auth', token: svc.token })).status, 'ok');
    assert.equal(svc.service.sessionCount, 3);

    client.close();
    await waitFor(() => svc.service.sessionCount === 2, 'the socket left the door');
    view.dispose();
    assert.equal(svc.service.sessionCount, 1);
    backend.dispose();
    assert.equal(svc.service.sessionCount, 0);
  } finally {
    await svc.dispose();
  }
});

test("graceful stop waits for the editor view's chat in flight (and a socket's), then closes every session", async () => {
  const svc = await startService({ base_url: fake.url, model: 'fake-model' });
  const order: string[] = [];
  const responses: Envelope[] = [];
  const backend = new LocalBackend(svc.service);
  const view = backend.openViewChannel({
    onResponse: (envelope) => {
      responses.push(envelope);
      order.push(`view answered ${String(envelope.id)}`);
    },
    onEvent: () => undefined,
  });
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  const closed = client.waitClose();
  try {
    // Each answer by its question: the two turns reach the provider in either order (each first works out
    // its environment block).
    const answer = (request: RecordedRequest) => {
      const asked =
        withoutNote((request.body as { messages: { role: string; content: string }[] }).messages)
          .filter((m) => m.role === 'user')
          .at(-1)?.content ?? '';
      return { text: asked.includes('from the editor') ? 'slow answer for the view' : 'slow answer for the socket', delayMs: 700 };
    };
    fake.script(answer, answer);
    view.send({ type: 'chat', message: 'from the editor', id: 'v1' });
    const socketChat = client.request({ type: 'chat', message: 'from the socket', id: 's1' }, 10_000).then((reply) => {
      order.push('socket answered s1');
      return reply;
    });
    await fake.waitFor((requests) => requests.length >= 2);

    await svc.stop();
    order.push('stopped');

    assert.equal(responses.length, 1);
    assert.equal(responses[0].status, 'ok');
    assert.equal((responses[0].data as { response: string }).response, 'slow answer for the view');
    assert.equal((await socketChat).status, 'ok');
    assert.equal(order.at(-1), 'stopped', `both chats were answered before stop resolved: ${order.join(', ')}`);
    assert.deepEqual([...order].sort(), ['socket answered s1', 'stopped', 'view answered v1']);

    // Every session is closed: the socket with 1001, the editor's view and its own session refuse further commands.
    assert.equal((await closed).code, 1001);
    assert.equal(svc.service.sessionCount, 0);
    view.send({ type: 'list_conversations', id: 'late' });
    await waitFor(() => responses.length === 2, 'the closed view answers at once');
    assert.equal(responses[1].status, 'error');
    assert.equal(responses[1].id, 'late');
    assert.match(String(responses[1].error), /session is closed/);
    assert.equal((await backend.request({ type: 'get_config' })).status, 'error');
  } finally {
    view.dispose();
    backend.dispose();
    await svc.dispose();
  }
});

test('a webhook account is a session of the door: its turn in flight at stop is counted, answered and its delivery stored before stop resolves', async () => {
  const receiver = await startWebhookReceiver();
  const svc = await startService(
    { base_url: fake.url, model: 'fake-model', channels: { webhook: { accounts: { door: { incoming_path: '/hooks/door', outgoing_url: receiver.url('/door') } } } } },
    { webhook: { retryBaseMs: 50, retryMaxMs: 500, timeoutMs: 1_000 } },
  );
  try {
    assert.equal(svc.service.sessionCount, 0);
    fake.script({ text: 'slow webhook answer', delayMs: 700 });
    const posted = await postJson(`${svc.httpUrl}/hooks/door`, { message: 'from the webhook' });
    assert.equal(posted.status, 202, posted.text);
    const { conversation_id, message_id } = posted.body!.data as { conversation_id: string; message_id: string };
    await fake.waitFor((requests) => requests.some((r) => JSON.stringify(r.body?.messages ?? []).includes('from the webhook')));
    assert.equal(svc.service.sessionCount, 1, "the account's session");
    assert.equal(svc.service.inFlightCount, 1, 'the turn is in flight at the door');

    await svc.stop();
    assert.equal(svc.service.sessionCount, 0, 'stop closed the webhook session too');
    assert.equal(svc.service.inFlightCount, 0);
    const store = await openStore(svc.dataDir);
    try {
      assert.equal(store.webhooks.getInbox(message_id)?.status, 'answered');
      assert.deepEqual(
        (await store.messages.recent(conversation_id, { limit: 10 })).map((m) => `${m.role}:${m.content}`),
        ['user:from the webhook', 'assistant:slow webhook answer'],
      );
      assert.equal(store.webhooks.pendingInbox().length, 0);
      assert.equal(store.webhooks.listDeliveries({ account: 'door', limit: 10 }).filter((d) => d.conversation_id === conversation_id).length, 1, 'the reply is queued for delivery');
    } finally {
      await store.close();
    }
  } finally {
    await svc.dispose();
    await receiver.close();
  }
});
