// A turn's user message and the model's request overlap (agent/user-commit.ts): the model is asked once
// the message's journal record is written, while its fdatasync runs. With the commit held: the model is
// asked, but no event is told, no tool runs and no answer is given before the message is durable; a
// kill -9 in that window (the real CLI) loses nothing acknowledged, and a resend finds the message, so
// nothing runs twice.
import assert from 'node:assert/strict';
import { open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TurnEvent } from '../../src/agent/agent';
import type { CompletionRequest, CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { serve } from '../helpers/cli';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { writeConfig, TEST_TOKEN } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 120_000 };

/** Holds every fdatasync of this thread's FileHandles (the journal's) from `hold()` until `release()`. */
async function datasyncGate(t: { after: (fn: () => void) => void }): Promise<{ hold: () => void; release: () => void }> {
  const probe = await open(__filename, 'r');
  const proto = Object.getPrototypeOf(probe) as { datasync: (this: unknown) => Promise<void> };
  await probe.close();
  const datasync = proto.datasync;
  let held: Promise<void> | undefined;
  let release = (): void => undefined;
  proto.datasync = async function (this: unknown) {
    if (held) await held;
    return datasync.call(this);
  };
  t.after(() => {
    proto.datasync = datasync;
    release();
  });
  return {
    hold: () => {
      held = new Promise((resolve) => (release = resolve));
    },
    release: () => release(),
  };
}

test('with the user message commit held, the model is asked, but no event, tool run or answer comes before it is durable', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('ra-user-commit-');
  t.after(cleanup);
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const asked: number[] = [];
  // Streams a piece and calls a tool (recall) first, then answers.
  const model: Provider = {
    name: 'two-step',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      asked.push(request.messages.length);
      // The user's message, not the turn's note (`moment`) that ends every request.
      const lastUser = request.messages.findLastIndex((m) => m.role === 'user' && m.moment !== true);
      if (!request.messages.slice(lastUser).some((m) => m.role === 'tool')) {
        request.onDelta?.('looking');
        return { text: '', tool_calls: [{ id: 'call-1', name: 'recall', arguments: { query: 'held' } }], finish_reason: 'tool_calls' };
      }
      request.onDelta?.('done');
      return { text: 'done', tool_calls: [], finish_reason: 'stop' };
    },
  };
  const service = await Service.open({ dataDir: dir, provider: () => model });
  t.after(() => service.stop());
  const gate = await datasyncGate(t);
  const conversationId = (await service.agent.chat({ message: 'first', source: { kind: 'lan' } })).conversation_id;
  asked.length = 0;

  gate.hold();
  const events: TurnEvent[] = [];
  let answered = false;
  const turn = service.agent
    .chat({ message: 'while held', conversationId, source: { kind: 'lan' }, stream: true }, (e) => events.push(e))
    .then((out) => {
      answered = true;
      return out;
    });
  try {
    await waitFor(() => asked.length === 1, 'the model asked while the commit is held');
    // Turns of the loop in which a turn not held would have told, run its tool and answered.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(events.length, 0, 'nothing told before the user message is durable');
    assert.equal(asked.length, 1, 'no tool ran (the model was not asked again)');
    assert.equal(answered, false, 'no answer');
    assert.equal((await service.store.messages.recent(conversationId, { limit: 1 }))[0]?.content, 'while held', 'no tool call stored after it');
  } finally {
    gate.release();
  }
  const out = await turn;
  assert.equal(out.response, 'done');
  assert.equal(asked.length, 2);
  assert.deepEqual(
    events.map((e) => (e.event === 'chat.message' ? `${e.event}:${e.message.role}` : e.event === 'chat.delta' ? `delta:${e.delta}` : e.event)),
    ['chat.message:user', 'delta:looking', 'tool.call', 'tool.result', 'delta:done', 'chat.message:assistant'],
    'the user message told first, then the held piece, in order',
  );
});

test('kill -9 while the user message is written but its fdatasync held (the model already asked): the message is kept, a resend runs nothing again', LIMIT, async (t) => {
  const provider = await startFakeOpenAI();
  t.after(() => provider.close());
  const { dir: data, cleanup } = await tempDir('ra-user-commit-kill-');
  t.after(cleanup);
  const flags = await tempDir('ra-user-commit-flag-');
  t.after(flags.cleanup);
  const flag = join(flags.dir, 'hold');
  await writeConfig(data, { provider: 'openai', model: 'fake-model', base_url: provider.url });
  const held = { NODE_OPTIONS: `--require ${join(__dirname, '..', 'helpers', 'hold-datasync.cjs')}`, RA_TEST_HOLD_DATASYNC: flag };
  let proc = await serve(data, 0, held);
  t.after(() => {
    proc.child.kill('SIGKILL');
  });
  let client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
  provider.script({ text: 'before the hold' }, { hang: true });
  const done = await client.request({ type: 'chat', message: 'first', client_message_id: 'k-done' });
  assert.equal(done.status, 'ok', JSON.stringify(done));
  const id = (done.data as { conversation_id: string }).conversation_id;

  await writeFile(flag, '');
  client.send({ type: 'chat', id: 'held', message: 'second', conversation_id: id, client_message_id: 'k-held', stream: true });
  await provider.waitFor((r) => r.length === 2);
  assert.equal(
    client.frames.find((f) => f.id === 'held'),
    undefined,
    'nothing told of the held message',
  );
  proc.child.kill('SIGKILL');
  await proc.exited;
  client.close();

  proc = await serve(data);
  client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
  const resent = await client.request({ type: 'chat', message: 'second', conversation_id: id, client_message_id: 'k-held' });
  assert.deepEqual(resent.data, { response: '', conversation_id: id, interrupted: true });
  const messages = await client.request({ type: 'get_messages', conversation_id: id });
  assert.deepEqual(
    (messages.data as { messages: { content: string }[] }).messages.map((m) => m.content),
    ['first', 'before the hold', 'second'],
  );
  assert.equal(provider.requests.length, 2, 'nothing ran again');
  client.close();
  proc.child.kill('SIGTERM');
  await proc.exited;
});
