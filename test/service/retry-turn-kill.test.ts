// retry_turn's durable rules (docs/protocol.md, "Retrying a turn"): the service killed with SIGKILL while
// a retry asks the model, or after the retry's tool round, loses nothing acknowledged (the answered
// turn before, the failed message, the tool round's rows) and stores no copy of the message; started
// again, the message is retried and answered once, the model reading it once. The real CLI in a child
// (run after `npm run build`) and the fake provider, which records every request.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serve } from '../helpers/cli';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { TEST_TOKEN, writeConfig } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

type Row = { id: string; role: string; content: string; tool_kind?: string };

async function rowsOf(client: TestClient, conversationId: string): Promise<Row[]> {
  const reply = await client.request({ type: 'get_messages', conversation_id: conversationId, include_tools: true });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return (reply.data as { messages: Row[] }).messages;
}

const timesAsked = (body: unknown, text: string) =>
  (body as { messages: { role: string; content: unknown }[] }).messages.filter((m) => m.role === 'user' && JSON.stringify(m.content).includes(text)).length;

for (const when of ['while the model is asked', 'after its tool round'] as const) {
  test(`killed ${when} during a retry: nothing acknowledged is lost, no copy is stored, the retry after the restart answers once`, async () => {
    const provider = await startFakeOpenAI();
    const { dir, cleanup } = await tempDir('ra-retry-kill-');
    await writeConfig(dir, { provider: 'openai', model: 'fake-model', base_url: provider.url, permission_mode: 'allow' });
    let proc = await serve(dir);
    try {
      let client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
      provider.script({ text: 'Hello back.' }, { status: 401 });
      const hello = await client.request({ type: 'chat', message: 'Hello' });
      const id = (hello.data as { conversation_id: string }).conversation_id;
      const failed = await client.request({ type: 'chat', message: 'Plan the release', conversation_id: id });
      assert.equal(failed.status, 'error');
      const message = (await rowsOf(client, id)).at(-1)!;
      assert.equal(message.content, 'Plan the release');

      const toolRound = when === 'after its tool round';
      const plan = { items: [{ text: 'Tag the release', status: 'pending' }] };
      if (toolRound) provider.script({ tool_calls: [{ id: 'call-1', name: 'todo', arguments: plan }] }, { hang: true });
      else provider.script({ hang: true });
      const asked = provider.requests.length;
      client.send({ type: 'retry_turn', id: 'r', conversation_id: id, message_id: message.id, client_retry_id: 'tap-1' });
      await provider.waitFor((r) => r.length === asked + (toolRound ? 2 : 1));
      proc.child.kill('SIGKILL');
      await proc.exited;

      proc = await serve(dir);
      client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
      const kept = await rowsOf(client, id);
      assert.deepEqual(
        kept.map((r) => [r.role, r.role === 'tool' ? r.tool_kind : r.content]),
        [
          ['user', 'Hello'],
          ['assistant', 'Hello back.'],
          ['user', 'Plan the release'],
          ...(toolRound
            ? [
                ['tool', 'call'],
                ['tool', 'result'],
              ]
            : []),
        ],
        'the answered turn, the message once, the tool round it made',
      );
      assert.equal(kept[2].id, message.id);

      // The restart forgot the retry (nothing is stored for it before its reply): the resend runs it, once.
      const before = provider.requests.length;
      provider.script({ text: 'The plan.' });
      const again = await client.request({ type: 'retry_turn', conversation_id: id, message_id: message.id, client_retry_id: 'tap-1' });
      assert.equal(again.status, 'ok', JSON.stringify(again));
      assert.deepEqual(again.data, { response: 'The plan.', conversation_id: id });
      assert.equal(provider.requests.length, before + 1);
      assert.equal(timesAsked(provider.requests[before].body, 'Plan the release'), 1, 'the model reads the message once');
      const after = await rowsOf(client, id);
      assert.deepEqual(after.at(-1)?.content, 'The plan.');
      assert.equal(after.filter((r) => r.role === 'user').length, 2, 'no copy of the message');
      client.close();
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
      await provider.close();
      await cleanup();
    }
  });
}
