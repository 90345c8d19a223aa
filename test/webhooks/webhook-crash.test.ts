import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openStore } from '../../src/store';
import { serve } from '../helpers/cli';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, writeConfig, TEST_TOKEN } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';

// The built CLI (dist/cli.js, `node esbuild.mjs`) killed with SIGKILL at the two dangerous moments of a
// webhook message's life; after restart every accepted message is answered and delivered, each delivery
// id accepted by the receiver exactly once.

const SECRET = 'crash-secret-0123456789abcdef';

let fake: FakeOpenAI;
let receiver: WebhookReceiver;
const cleanups: (() => Promise<void>)[] = [];
before(async () => {
  fake = await startFakeOpenAI();
  receiver = await startWebhookReceiver({ secret: SECRET });
});
after(async () => {
  for (const cleanup of cleanups) await cleanup();
  await fake?.close();
  await receiver?.close();
});

async function dataDirWithAccount(path: string) {
  const temp = await tempDir('ra-webhook-crash-');
  cleanups.push(temp.cleanup);
  await writeConfig(temp.dir, {
    base_url: fake.url,
    channels: { webhook: { accounts: { crash: { incoming_path: '/in', outgoing_url: receiver.url(path), secret: SECRET } } } },
  });
  return temp.dir;
}

async function deliveryStatuses(port: number, conversationId: string): Promise<string[]> {
  const client = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TEST_TOKEN);
  const reply = await client.request({ type: 'list_deliveries', limit: 500 });
  client.close();
  assert.equal(reply.status, 'ok');
  return (reply.data as { deliveries: { conversation_id: string; status: string }[] }).deliveries.filter((d) => d.conversation_id === conversationId).map((d) => d.status);
}

/** The conversation as stored, read from the data directory once the process is gone. */
async function storedMessages(dir: string, conversationId: string): Promise<string[]> {
  const store = await openStore(dir);
  try {
    return (await store.messages.recent(conversationId, { limit: 500 })).map((m) => `${m.role}:${m.content}`);
  } finally {
    await store.close();
  }
}

test('killed between the 202 and the reply: the message is answered and delivered after restart', async () => {
  const dir = await dataDirWithAccount('/first');
  const first = await serve(dir);
  fake.script({ text: 'too slow to be stored', delayMs: 30_000 });
  const seen = fake.requests.length;
  const reply = await postJson(`http://127.0.0.1:${first.port}/in`, { message: 'answer me after the crash' }, { 'x-service-secret': SECRET });
  assert.equal(reply.status, 202);
  const { conversation_id } = reply.body!.data as { conversation_id: string };
  await fake.waitFor((requests) => requests.length > seen, 10_000);
  first.child.kill('SIGKILL');
  await first.exited;
  assert.equal(receiver.requests.filter((r) => r.path === '/first').length, 0);

  const second = await serve(dir);
  try {
    await receiver.waitFor((r) => [...r.processed.values()].some((c) => c.path === '/first'), 'the delivery after restart', 15_000);
    const delivered = [...receiver.processed.values()].filter((c) => c.path === '/first');
    assert.equal(delivered.length, 1);
    assert.deepEqual(delivered[0].body, { message: 'echo: answer me after the crash', conversation_id });
    assert.equal(delivered[0].signatureValid, true);
    assert.deepEqual(await deliveryStatuses(second.port, conversation_id), ['delivered']);
  } finally {
    second.child.kill('SIGTERM');
    assert.equal((await second.exited).code, 0);
  }
  // Answered once: the reply of the killed run was never stored.
  assert.deepEqual(await storedMessages(dir, conversation_id), ['user:answer me after the crash', 'assistant:echo: answer me after the crash']);
});

test('killed between the reply and its delivery: delivered after restart, each delivery id exactly once', async () => {
  const dir = await dataDirWithAccount('/second');
  const first = await serve(dir);
  receiver.setDefault({ status: 503 });
  const conversations: string[] = [];
  for (let i = 0; i < 3; i += 1) {
    const reply = await postJson(`http://127.0.0.1:${first.port}/in`, { message: `message ${i}` }, { 'x-service-secret': SECRET });
    assert.equal(reply.status, 202);
    conversations.push((reply.body!.data as { conversation_id: string }).conversation_id);
  }
  // Each reply is stored with its delivery, and the receiver has refused a first attempt of each.
  const attempted = () => new Set(receiver.requests.filter((r) => r.path === '/second').map((r) => r.headers['webhook-id']));
  await receiver.waitFor(() => attempted().size === 3, 'a first attempt of each delivery', 10_000);
  first.child.kill('SIGKILL');
  await first.exited;
  receiver.setDefault({ status: 200 });

  const second = await serve(dir);
  try {
    const processed = () => [...receiver.processed.values()].filter((c) => c.path === '/second');
    await receiver.waitFor(() => processed().length === 3, 'three deliveries after restart', 15_000);
    // Give a wrongly repeated attempt the time to show up.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const ids = receiver.requests.filter((r) => r.path === '/second' && r.answered === 200).map((r) => String(r.headers['webhook-id']));
    assert.equal(ids.length, 3, 'one 2xx per delivery');
    assert.deepEqual([...new Set(ids)].sort(), [...attempted()].map(String).sort(), 'the same delivery ids as before the crash');
    assert.equal(receiver.duplicates(), 0);
    assert.deepEqual(
      processed()
        .map((c) => c.body?.conversation_id)
        .sort(),
      [...conversations].sort(),
    );
    for (const callback of processed()) assert.equal(callback.signatureValid, true);
  } finally {
    second.child.kill('SIGTERM');
    assert.equal((await second.exited).code, 0);
  }
});

test('killed with big replies pending for a receiver that is down: sql.js holds none of their bodies, each is sent after restart byte for byte, signed', async () => {
  const dir = await dataDirWithAccount('/third');
  const first = await serve(dir);
  receiver.setDefault({ status: 503 });
  const PENDING = 4;
  const BIG = 300_000;
  for (let i = 0; i < PENDING; i += 1) {
    const reply = await postJson(`http://127.0.0.1:${first.port}/in`, { message: `big ${i} ${'z'.repeat(BIG)}` }, { 'x-service-secret': SECRET });
    assert.equal(reply.status, 202);
  }
  // What each delivery sent before the crash, by webhook-id (the fake echoes every message, as big).
  const refused = () => new Map(receiver.requests.filter((r) => r.path === '/third').map((r) => [String(r.headers['webhook-id']), r.raw]));
  await receiver.waitFor(() => refused().size === PENDING, 'a first attempt of each delivery', 30_000);
  const before = refused();
  first.child.kill('SIGKILL');
  await first.exited;

  // The store as the next start finds it: every delivery pending, none of their bodies in sql.js.
  const store = await openStore(dir);
  try {
    assert.equal(store.webhooks.countDeliveries('pending'), PENDING);
    const pages = store.db.get<{ page_count: number }>('PRAGMA page_count')!.page_count;
    const bytes = pages * store.db.get<{ page_size: number }>('PRAGMA page_size')!.page_size;
    console.log(`sql.js holds ${bytes} bytes with ${PENDING} replies of ${BIG} bytes pending`);
    // The database of a new directory with these few rows is about 280 KB; with the bodies inline, 1.5 MB.
    assert.ok(bytes < (PENDING * BIG) / 2, `sql.js holds ${bytes} bytes with ${PENDING} replies of ${BIG} bytes pending`);
  } finally {
    await store.close();
  }

  receiver.setDefault({ status: 200 });
  const second = await serve(dir);
  try {
    const processed = () => [...receiver.processed.values()].filter((c) => c.path === '/third');
    await receiver.waitFor(() => processed().length === PENDING, 'every delivery after restart', 30_000);
    for (const sent of processed()) {
      assert.equal(sent.raw, before.get(String(sent.headers['webhook-id'])), 'the same bytes as before the crash');
      assert.equal(sent.signatureValid, true);
    }
  } finally {
    second.child.kill('SIGTERM');
    assert.equal((await second.exited).code, 0);
  }
});
