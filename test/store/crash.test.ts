import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { serve } from '../helpers/cli';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { writeConfig, TEST_TOKEN } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

let fake: FakeOpenAI;
let cleanup: () => Promise<void>;
before(async () => {
  fake = await startFakeOpenAI();
});
after(async () => {
  await fake?.close();
  await cleanup?.();
});

test('SIGKILL mid-load: every acknowledged chat is in the database after restart', async () => {
  const temp = await tempDir('ra-crash-');
  cleanup = temp.cleanup;
  await writeConfig(temp.dir, { base_url: fake.url });
  const proc = await serve(temp.dir);
  const url = `ws://127.0.0.1:${proc.port}/ws`;
  const acknowledged: { conversation_id: string; message: string; response: string }[] = [];
  let stop = false;
  const workers = Array.from({ length: 8 }, async (_, w) => {
    const client = await TestClient.authed(url, TEST_TOKEN);
    let conversation_id: string | undefined;
    for (let i = 0; !stop && !client.closed; i += 1) {
      const message = `w${w}-m${i}`;
      const reply = await client.request({ type: 'chat', message, ...(conversation_id ? { conversation_id } : {}) }).catch(() => undefined);
      if (reply?.status !== 'ok') break;
      const data = reply.data as { conversation_id: string; response: string };
      conversation_id = data.conversation_id;
      acknowledged.push({ conversation_id, message, response: data.response });
    }
  });
  await waitFor(() => acknowledged.length >= 150, '150 acknowledged chats', 30_000);
  proc.child.kill('SIGKILL');
  stop = true;
  await proc.exited;
  await Promise.all(workers);
  assert.ok(acknowledged.length >= 150);

  const restarted = await serve(temp.dir);
  try {
    const client = await TestClient.authed(`ws://127.0.0.1:${restarted.port}/ws`, TEST_TOKEN);
    const byConversation = new Map<string, string[]>();
    for (const conversation_id of new Set(acknowledged.map((a) => a.conversation_id))) {
      const reply = await client.request({ type: 'get_messages', conversation_id, limit: 500 });
      assert.equal(reply.status, 'ok', `conversation ${conversation_id} lost`);
      byConversation.set(
        conversation_id,
        (reply.data as { messages: { content: string }[] }).messages.map((m) => m.content),
      );
    }
    for (const ack of acknowledged) {
      const contents = byConversation.get(ack.conversation_id)!;
      assert.ok(contents.includes(ack.message), `acknowledged message ${ack.message} lost`);
      assert.ok(contents.includes(ack.response), `acknowledged reply to ${ack.message} lost`);
    }
    client.close();
  } finally {
    restarted.child.kill('SIGTERM');
    await restarted.exited;
  }
});
