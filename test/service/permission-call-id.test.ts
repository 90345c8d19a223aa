// A permission request names the tool call it asks about (`call_id`, the same as its `tool.call` event's):
// two identical calls (same tool, same arguments) in one step are told apart, so a page marks the card
// that really waits (src/web/chat/waiting-tools.ts), not the first of two alike.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useService } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
const svc = useService({ workspace: true, config: async () => ({ permission_mode: 'ask' }) });

async function next(client: TestClient, match: (f: Frame) => boolean, seen: Set<Frame>): Promise<Frame> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = client.frames.find((f) => match(f) && !seen.has(f));
    if (found) {
      seen.add(found);
      return found;
    }
    if (Date.now() > deadline) throw new Error('no matching frame arrived');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('two identical calls in one step: each permission.request carries its own call_id, that of its tool.call', async () => {
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const call = { name: 'list_directory', arguments: { path: '.' } };
    svc.fake.script({ tool_calls: [call, call], text: '' }, { text: 'listed twice' });
    const chat = client.request({ type: 'chat', message: 'list it twice' });
    const seen = new Set<Frame>();
    const asked: Frame[] = [];
    for (let i = 0; i < 2; i += 1) {
      const prompt = await next(client, (f) => f.event === 'permission.request', seen);
      asked.push(prompt);
      assert.equal((await client.request({ type: 'permission_response', request_id: prompt.request_id, decision: 'allow' })).status, 'ok');
    }
    const reply = await chat;
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    const calls = client.frames.filter((f) => f.event === 'tool.call');
    assert.equal(calls.length, 2);
    const callIds = calls.map((f) => f.call_id);
    assert.ok(
      callIds.every((id) => typeof id === 'string' && id.length > 0),
      JSON.stringify(calls),
    );
    assert.notEqual(callIds[0], callIds[1]);
    assert.deepEqual(
      asked.map((f) => f.call_id),
      callIds,
      'each request names its own call, in the calls’ order',
    );
    // The same requests, listed, carry it too.
    assert.deepEqual(
      asked.map((f) => f.arguments),
      [call.arguments, call.arguments],
    );
  } finally {
    client.close();
  }
});
