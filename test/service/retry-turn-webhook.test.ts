// retry_turn on a webhook message whose turn failed for a passing reason (the inbox will try it again
// after its backoff) is refused (conflict): the row is still pending and the conversation's queue is
// free, so before the fix retry_turn ran it and the inbox's own retry answered the same message a second
// time (found by review25b, s25; this test failed then).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { postJson, startService } from '../helpers/service';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';

const SECRET = 'provider-failure-secret-0123456789';
let receiver: WebhookReceiver | undefined;
after(() => receiver?.close());

test('retry_turn of a webhook message its inbox still tries is refused: one reply, not two', async () => {
  receiver = await startWebhookReceiver({ secret: SECRET });
  const fake = await startFakeOpenAI();
  const account = { incoming_path: '/hooks/alpha', outgoing_url: receiver.url('/alpha'), secret: SECRET };
  const svc = await startService({ base_url: fake.url, channels: { webhook: { accounts: { alpha: account } } } }, { webhook: { retryBaseMs: 4_000, retryMaxMs: 5_000, timeoutMs: 1_000 } });
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    fake.script({ status: 500 }, { status: 500 }, { status: 500 });
    const reply = await postJson(`${svc.httpUrl}/hooks/alpha`, { message: 'webhook text' }, { 'x-service-secret': SECRET });
    assert.equal(reply.status, 202, reply.text);
    const { conversation_id: conversationId, message_id: inboxId } = reply.body!.data as { conversation_id: string; message_id: string };
    // Wait until the first try failed (the message is in the conversation, its row pending).
    let messages: { id: string; role: string }[] = [];
    for (let i = 0; i < 100; i++) {
      await new Promise((r) => setTimeout(r, 50));
      messages = (await svc.service.store.messages.recent(conversationId)) as { id: string; role: string }[];
      const runs = svc.service.store.webhooks.getInbox(inboxId)?.status;
      if (messages.length === 1 && runs === 'pending' && fake.requests.length >= 3) break;
    }
    await new Promise((r) => setTimeout(r, 300));
    fake.script({ text: 'from the retry' });
    const retried = await client.request({ type: 'retry_turn', conversation_id: conversationId, message_id: messages[0].id });
    // The inbox's timer fires after its backoff and answers the message again.
    await new Promise((r) => setTimeout(r, 8_000));
    const rows = (await svc.service.store.messages.recent(conversationId)).map((m) => [m.role, m.content]);
    assert.equal(retried.status, 'error', 'refused while the inbox will try it again (conflict)');
    assert.equal(retried.code, 'conflict', JSON.stringify(retried));
    assert.equal(rows.filter(([role]) => role === 'assistant').length, 1, 'the message answered once');
  } finally {
    client.close();
    await svc.dispose();
    await fake.close();
  }
});
