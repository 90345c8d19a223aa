// A tool the model named with a lone surrogate: tool.call and tool.result name it as get_messages does (review22a: the events carried the raw name).
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;

/** A service asking a fake OpenAI server, tools allowed, and a client authed to it; all closed after `t`. */
async function serviceWithFake(t: TestContext): Promise<{ fake: FakeOpenAI; client: TestClient }> {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const { dir, cleanup } = await tempDir('lone-tool-call-');
  t.after(cleanup);
  const running = await startService({ provider: 'openai', model: 'fake-model', base_url: fake.url, permission_mode: 'allow' }, { dataDir: dir });
  t.after(() => running.stop());
  const client = await TestClient.authed(running.wsUrl, running.token);
  t.after(() => client.close());
  return { fake, client };
}

test('a tool call named with a lone surrogate: the events name the tool as get_messages does', { timeout: 120_000 }, async (t) => {
  const { fake, client } = await serviceWithFake(t);
  fake.script({ tool_calls: [{ id: 'call_1', name: 'nosuch\ud800', arguments: { a: 1 } }] }, { text: 'done' });
  const answer = await client.request({ type: 'chat', message: 'go' }, 30_000);
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  const id = (answer.data as { conversation_id: string }).conversation_id;
  const events = client.frames.filter((f: Frame) => (f.event === 'tool.call' || f.event === 'tool.result') && f.conversation_id === id).map((f: Frame) => f.tool);
  const got = await client.request({ type: 'get_messages', conversation_id: id, include_tools: true });
  const stored = (got.data as { messages: { tool_name?: string }[] }).messages.filter((m) => m.tool_name !== undefined).map((m) => m.tool_name);
  assert.deepEqual(stored, ['nosuch\ufffd', 'nosuch\ufffd'], 'stored well-formed');
  assert.deepEqual(events, stored, 'the events name the tool as it is stored');
});

// review22b: two ids that differ only in a lone surrogate became one when made well-formed, and the
// second call's result was dropped from the next request; a provider repeating an id is the same case.
test('calls whose ids become one (a lone surrogate each, or repeated): the next request answers each call under its own id', { timeout: 120_000 }, async (t) => {
  const { fake, client } = await serviceWithFake(t);
  fake.script(
    {
      tool_calls: [
        { id: 'call_\ud800', name: 'nosuch_a', arguments: {} },
        { id: 'call_\ud801', name: 'nosuch_b', arguments: {} },
        { id: 'same', name: 'nosuch_c', arguments: {} },
        { id: 'same', name: 'nosuch_d', arguments: {} },
      ],
    },
    { text: 'done' },
  );
  const answer = await client.request({ type: 'chat', message: 'go' }, 30_000);
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  const messages = (fake.requests.at(-1)!.body as { messages: { role: string; tool_calls?: { id: string }[]; tool_call_id?: string }[] }).messages;
  const asked = messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []));
  const answered = messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
  assert.deepEqual(asked, ['call_\ufffd', 'call_\ufffd_2', 'same', 'same_2']);
  assert.deepEqual(answered, asked);
});
