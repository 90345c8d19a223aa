// A tool call id with a lone surrogate, killed while it waits for permission: the restart's denial answers the call (review22a: permission_requests.call_id read back changed).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serve } from '../helpers/cli';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { TEST_TOKEN, writeConfig } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

test('killed while a call with a lone surrogate in its id waits for permission: the model is told it was denied by the restart', { timeout: 120_000 }, async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const workspace = await tempDir('lone-call-id-ws-');
  t.after(workspace.cleanup);
  const temp = await tempDir('lone-call-id-');
  t.after(temp.cleanup);
  await writeConfig(temp.dir, { base_url: fake.url, workspace: workspace.dir, permission_mode: 'ask' });
  const first = await serve(temp.dir);
  t.after(async () => void first.child.kill('SIGKILL'));
  const c = await TestClient.authed(`ws://127.0.0.1:${first.port}/ws`, TEST_TOKEN);
  fake.script({ tool_calls: [{ id: 'call_\ud800', name: 'write_file', arguments: { path: 'r.txt', content: 'r' } }] });
  c.send({ type: 'chat', message: 'write r.txt', id: 'k1' });
  const request = await c.next((f) => f.event === 'permission.request');
  const told = await c.next((f) => f.event === 'tool.call');
  first.child.kill('SIGKILL');
  await first.exited;
  c.close();

  const second = await serve(temp.dir);
  t.after(async () => {
    second.child.kill('SIGTERM');
    await second.exited;
  });
  const again = await TestClient.authed(`ws://127.0.0.1:${second.port}/ws`, TEST_TOKEN);
  t.after(() => again.close());
  const conversation_id = request.conversation_id as string;
  const got = await again.request({ type: 'get_messages', conversation_id, include_tools: true });
  const tools = (got.data as { messages: { role: string; call_id?: string }[] }).messages.filter((m) => m.role === 'tool');
  assert.equal(tools.length, 2, JSON.stringify(tools));
  assert.equal(tools[1].call_id, tools[0].call_id, 'the stored result answers the call (same call_id)');
  assert.equal(tools[0].call_id, told.call_id, 'the live tool.call named the call as it is stored');
  assert.equal(told.call_id, 'call_\ufffd');
  fake.script({ text: 'ok' });
  assert.equal((await again.request({ type: 'chat', message: 'still there?', conversation_id })).status, 'ok');
  const sent = (fake.requests.at(-1)!.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);
  assert.equal(sent.length, 1, JSON.stringify(sent));
  assert.match(sent[0], /the service restarted while this waited for permission/);
});
