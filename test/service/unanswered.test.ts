// Why a message has no reply, kept (get_messages' `unanswered`, docs/protocol.md): a page drawn afresh
// after a reload, a switch or a restart says what `turn.ended` said live (failed, and why; stopped), not
// only "not answered". Kept durable on the conversation when a turn fails or is stopped; given only for the
// last user message when nothing answered it. Real parts: the service in process on 127.0.0.1, the fake
// OpenAI provider over HTTP, a real data directory restarted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { startService, TEST_API_KEY } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 120_000 };

interface Messages {
  messages: { id: string; role: string; content: string }[];
  unanswered?: Record<string, unknown>;
}

async function history(client: TestClient, id: string): Promise<Messages> {
  const answer = await client.request({ type: 'get_messages', conversation_id: id });
  assert.equal(answer.status, 'ok');
  return answer.data as Messages;
}

test('a failed turn keeps why across a restart; an answer after it leaves nothing to say', LIMIT, async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const { dir, cleanup } = await tempDir('ra-unanswered-');
  t.after(cleanup);
  const config = { base_url: fake.url, model: 'fake-model', permission_mode: 'allow', workspace: dir };
  let svc = await startService(config, { dataDir: dir });
  let client = await TestClient.authed(svc.wsUrl, svc.token);
  fake.script({ status: 401 });
  const failed = await client.request({ type: 'chat', message: 'refused by the provider' });
  assert.equal(failed.status, 'error');
  const id = (await client.request({ type: 'list_conversations' })).data as { conversations: { id: string }[] };
  const conversationId = id.conversations[0].id;
  const first = await history(client, conversationId);
  const [asked] = first.messages;
  assert.deepEqual(first.unanswered, {
    message_id: asked.id,
    outcome: 'failed',
    error: first.unanswered?.error,
    reason: 'auth',
    provider: 'openai',
  });
  assert.match(String(first.unanswered?.error), /credentials.*401/);
  assert.ok(!JSON.stringify(first).includes(TEST_API_KEY.slice(-8)), 'no piece of the api key');

  // Durable: the same after the service restarts on the same data directory.
  client.close();
  await svc.stop();
  svc = await startService(config, { dataDir: dir, keepConfig: true });
  t.after(() => svc.stop());
  client = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(() => client.close());
  assert.deepEqual((await history(client, conversationId)).unanswered, first.unanswered);

  // Answered by a retry: the kept reason is no longer the news.
  fake.script({ text: 'answered at last', chunks: 1 });
  const retried = await client.request({ type: 'retry_turn', conversation_id: conversationId, message_id: asked.id, client_retry_id: 'r-1' });
  assert.equal(retried.status, 'ok');
  const after = await history(client, conversationId);
  assert.deepEqual(
    after.messages.map((m) => m.role),
    ['user', 'assistant'],
  );
  assert.equal(after.unanswered, undefined);
});

test('a stopped turn is kept as stopped; a later message of its conversation does not inherit it', LIMIT, async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const svc = await startService({ base_url: fake.url, model: 'fake-model', permission_mode: 'allow' });
  t.after(() => svc.dispose());
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(() => client.close());

  fake.script({ hang: true });
  client.send({ type: 'chat', message: 'stop me', id: 'c1' });
  const stored = await client.next((f) => f.event === 'chat.message' && f.id === 'c1');
  const conversationId = String(stored.conversation_id);
  await fake.waitFor((requests) => requests.length > 0);
  client.send({ type: 'cancel', id: 'c1' });
  await client.next((f) => f.event === 'turn.ended' && f.conversation_id === conversationId);
  const stopped = await history(client, conversationId);
  assert.deepEqual(stopped.unanswered, { message_id: stopped.messages[0].id, outcome: 'cancelled' });

  // A new message answered: nothing unanswered, though the stopped one's reason is still stored.
  fake.script({ text: 'second answered', chunks: 1 });
  assert.equal((await client.request({ type: 'chat', message: 'next one', conversation_id: conversationId })).status, 'ok');
  const answered = await history(client, conversationId);
  assert.equal(answered.unanswered, undefined);
  assert.equal(svc.service.store.conversations.unansweredOf(conversationId)?.outcome, 'cancelled', 'kept, and not taken for the answered message');
});
