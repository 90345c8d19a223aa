// retry_turn's durable rules (docs/protocol.md, "Retrying a turn"): the service killed with SIGKILL while
// a retry asks the model, or after the retry's tool round, loses nothing acknowledged (the answered
// turn before, the failed message, the tool round's rows) and stores no copy of the message; started
// again, the phone's resend of that retry (same client_retry_id) is answered `interrupted` and the model is
// not asked again (s27: before, the resend ran the turn again, its tools with it); a new retry answers the
// message once, the model reading it once, and the first retry's resend then gets that reply. Another
// person's resend under the same id is a retry of its own. The real CLI in a child (run after `npm run
// build`) and the fake provider, which records every request.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serve } from '../helpers/cli';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { hashPassword } from '../../src/transport/auth/passwords';
import { sessionClient, TEST_TOKEN, writeConfig } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

type Row = { id: string; role: string; content: string; tool_kind?: string };
const PASSWORD = 'correct horse battery staple';

async function rowsOf(client: TestClient, conversationId: string): Promise<Row[]> {
  const reply = await client.request({ type: 'get_messages', conversation_id: conversationId, include_tools: true });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return (reply.data as { messages: Row[] }).messages;
}

const timesAsked = (body: unknown, text: string) =>
  (body as { messages: { role: string; content: unknown }[] }).messages.filter((m) => m.role === 'user' && JSON.stringify(m.content).includes(text)).length;

for (const when of ['while the model is asked', 'after its tool round'] as const) {
  test(`killed ${when} during a retry: nothing acknowledged is lost, no copy is stored, the resend after the restart is answered, never run again`, async () => {
    const provider = await startFakeOpenAI();
    const { dir, cleanup } = await tempDir('ra-retry-kill-');
    const users = [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }];
    await writeConfig(dir, { provider: 'openai', model: 'fake-model', base_url: provider.url, permission_mode: 'allow', users });
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

      // The phone's outbox resends the retry the kill cut short: answered, never run again (its tools would run twice).
      const before = provider.requests.length;
      const retry = { type: 'retry_turn', conversation_id: id, message_id: message.id, client_retry_id: 'tap-1' };
      const resent = await client.request(retry);
      assert.equal(resent.status, 'ok', JSON.stringify(resent));
      assert.deepEqual(resent.data, { response: '', conversation_id: id, interrupted: true });
      assert.equal(provider.requests.length, before, 'the model is not asked again for the resend');
      assert.equal((await rowsOf(client, id)).length, kept.length, 'nothing stored for the resend');

      // Another person's id is their own: ada's 'tap-1' is not the owner's retry (not answered with it).
      const ada = await sessionClient({ httpUrl: `http://127.0.0.1:${proc.port}`, wsUrl: `ws://127.0.0.1:${proc.port}/ws` } as Parameters<typeof sessionClient>[0], 'ada', PASSWORD);
      provider.script({ text: 'The plan.' });
      const hers = await ada.request(retry);
      assert.equal(hers.status, 'ok', JSON.stringify(hers));
      assert.deepEqual(hers.data, { response: 'The plan.', conversation_id: id }, "ada's own retry runs");
      assert.equal(provider.requests.length, before + 1);
      assert.equal(timesAsked(provider.requests[before].body, 'Plan the release'), 1, 'the model reads the message once');
      const after = await rowsOf(client, id);
      assert.deepEqual(after.at(-1)?.content, 'The plan.');
      assert.equal(after.filter((r) => r.role === 'user').length, 2, 'no copy of the message');
      ada.close();

      // Answered now: the owner's resend gets the message's reply, across another kill too.
      proc.child.kill('SIGKILL');
      await proc.exited;
      proc = await serve(dir);
      client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
      const answered = await client.request(retry);
      assert.deepEqual(answered.data, { response: 'The plan.', conversation_id: id }, JSON.stringify(answered));
      const other = await client.request({ ...retry, message_id: kept[0].id });
      assert.equal(other.code, 'invalid_request', 'the same id for another message');
      assert.equal(provider.requests.length, before + 1, 'the model was asked once in all');
      client.close();
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
      await provider.close();
      await cleanup();
    }
  });
}
