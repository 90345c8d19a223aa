// A turn's user message is written to the journal at once and its fdatasync deferred to the turn's first
// outward effect (agent/user-commit.ts): a 0-tool turn whose model answers first costs one sync for both
// messages. The model is asked once the record is written; with the sync held, no event reaches the
// sender or a follower, no tool runs and no answer is given before the message is durable, and then all
// come in order; a kill -9 in that window (the real CLI) loses nothing, and a resend runs nothing twice.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TurnEvent } from '../../src/agent/agent';
import type { CompletionRequest, CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { serve } from '../helpers/cli';
import { datasyncGate } from '../helpers/datasync-gate';
import { fullDiskFake } from '../helpers/full-disk-fake';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { writeConfig, TEST_TOKEN } from '../helpers/service';
import { withService } from '../helpers/service-fixture';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 120_000 };

type Frame = Record<string, unknown>;

/** Answers at once (no tool), streaming its one piece when asked to. */
const instant: Provider = {
  name: 'instant',
  async complete(request: CompletionRequest): Promise<CompletionResult> {
    request.onDelta?.('done');
    return { text: 'done', tool_calls: [], finish_reason: 'stop' };
  },
};

test('a 0-tool turn whose model answers before anything is told costs one journal sync for both messages; streamed, two', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('ra-user-commit-syncs-');
  t.after(cleanup);
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => instant });
  t.after(() => service.stop());
  await service.store.db.flush();
  const syncs = await datasyncGate(t);
  // Both threads' fsyncs: the journal's here, history.db's in its worker (none expected: journaled bodies).
  const counted = async () => syncs.count() + (await service.store.history.stats()).syncs;

  let before = await counted();
  const conversationId = (await service.agent.chat({ message: 'first', source: { kind: 'lan' } })).conversation_id;
  assert.equal((await counted()) - before, 1, "a new conversation's first turn: its row, the user message and the reply");
  for (let i = 0; i < 3; i++) {
    before = await counted();
    const events: string[] = [];
    await service.agent.chat({ message: `turn ${i}`, conversationId, source: { kind: 'lan' } }, (e) => events.push(e.event === 'chat.message' ? e.message.role : e.event));
    assert.equal((await counted()) - before, 1, `turn ${i}: one sync`);
    assert.deepEqual(events, ['user', 'assistant'], 'the user message told first, once durable');
  }
  // The first streamed piece is an outward effect: the user message is made durable and told before it.
  before = await counted();
  const events: string[] = [];
  await service.agent.chat({ message: 'streamed', conversationId, source: { kind: 'lan' }, stream: true }, (e) => events.push(e.event === 'chat.message' ? e.message.role : e.event));
  assert.equal((await counted()) - before, 2, 'a streamed turn: the user message synced before its first piece, then the reply');
  assert.deepEqual(events, ['user', 'chat.delta', 'assistant']);
  const stored = await service.store.messages.recent(conversationId, { limit: 20 });
  assert.deepEqual(
    stored.map((m) => m.content),
    ['first', 'done', 'turn 0', 'done', 'turn 1', 'done', 'turn 2', 'done', 'streamed', 'done'],
  );
});

/** Waits until the client has received a frame matching `match` (left in its inbox). */
async function received(frames: Frame[], match: (f: Frame) => boolean): Promise<void> {
  await waitFor(() => frames.some(match), 'the frame');
}

test(
  'with the journal sync held, a connected follower and the sender get nothing, no tool runs and nothing is answered until the user message is durable; then all of it, in order',
  LIMIT,
  async (t) => {
    const svc = await withService(t, { workspace: true, config: { permission_mode: 'allow' } });
    const sender = await TestClient.authed(svc.wsUrl, svc.token);
    const follower = await TestClient.authed(svc.wsUrl, svc.token);
    t.after(() => {
      sender.close();
      follower.close();
    });
    const first = await sender.request({ type: 'chat', message: 'hello' });
    const id = (first.data as { conversation_id: string }).conversation_id;
    assert.equal((await follower.request({ type: 'follow_conversation', conversation_id: id })).status, 'ok');
    await received(follower.frames, (f) => f.event === 'turn.ended' && f.conversation_id === id);
    const gate = await datasyncGate(t);
    sender.frames.length = 0;
    follower.frames.length = 0;
    const asked = svc.fake.requests.length;

    svc.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }], text: 'looking', chunks: 2 }, { text: 'all done', chunks: 2 });
    gate.hold();
    sender.send({ type: 'chat', id: 'held', message: 'while held', conversation_id: id, stream: true });
    try {
      await svc.fake.waitFor((requests) => requests.length === asked + 1);
      // Turns of the loop in which a turn not held would have told its message, streamed, run its tool and answered.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const ofTurn = (frames: Frame[]) => frames.filter((f) => f.conversation_id === id || f.id === 'held');
      assert.deepEqual(ofTurn(follower.frames), [], 'nothing reaches the follower');
      assert.deepEqual(
        ofTurn(sender.frames).filter((f) => f.event !== 'conversation.updated'),
        [],
        'nothing reaches the sender',
      );
      // conversation.updated goes to every client: the turn's state may change (queued, running), its row must not show the message.
      for (const f of [...sender.frames, ...follower.frames].filter((f) => f.event === 'conversation.updated')) {
        assert.ok(!JSON.stringify(f).includes('while held'), `an update that shows the message: ${JSON.stringify(f)}`);
      }
      assert.equal(svc.fake.requests.length, asked + 1, 'no tool ran (the model was not asked again)');
    } finally {
      gate.release();
    }
    const answer = await sender.next((f) => f.id === 'held' && 'status' in f);
    assert.equal(answer.status, 'ok', JSON.stringify(answer));
    await received(follower.frames, (f) => f.event === 'turn.ended' && f.conversation_id === id);
    const live = follower.frames
      .filter((f) => f.conversation_id === id && f.event !== 'conversation.updated')
      .map((f) => (f.event === 'chat.message' ? `message:${(f.message as { role: string }).role}` : String(f.event)));
    assert.deepEqual(
      live.filter((e, i) => e !== 'chat.delta' || live[i - 1] !== 'chat.delta'),
      ['message:user', 'chat.delta', 'message:assistant', 'tool.call', 'tool.result', 'chat.delta', 'message:assistant', 'turn.ended'],
      'the user message first, then the rest in order',
    );
  },
);

test(
  'with the journal sync held, list_conversations, get_messages, search_messages and export_conversation answer nothing that shows the user message (last_message, its row, its text) until it is durable',
  LIMIT,
  async (t) => {
    const svc = await withService(t, { workspace: true, config: { permission_mode: 'allow' } });
    const sender = await TestClient.authed(svc.wsUrl, svc.token);
    const reader = await TestClient.authed(svc.wsUrl, svc.token);
    t.after(() => {
      sender.close();
      reader.close();
    });
    const first = await sender.request({ type: 'chat', message: 'hello' });
    const id = (first.data as { conversation_id: string }).conversation_id;
    const gate = await datasyncGate(t);
    const asked = svc.fake.requests.length;
    svc.fake.script({ text: 'answered', chunks: 1 });
    gate.hold();
    sender.send({ type: 'chat', id: 'held', message: 'while held', conversation_id: id });
    try {
      await svc.fake.waitFor((requests) => requests.length === asked + 1);
      // The message is applied in memory and written to the journal's file, not yet durable.
      reader.send({ type: 'list_conversations', id: 'list' });
      reader.send({ type: 'get_messages', id: 'messages', conversation_id: id });
      reader.send({ type: 'search_messages', id: 'search', query: 'while held' });
      reader.send({ type: 'export_conversation', id: 'export', conversation_id: id, format: 'markdown' });
      // Turns of the loop in which a read not held would have been answered.
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const answer of reader.frames.filter((f) => ['list', 'messages', 'search', 'export'].includes(String(f.id))))
        assert.ok(!JSON.stringify(answer).includes('while held'), `an answer that shows the message before it is durable: ${JSON.stringify(answer)}`);
    } finally {
      gate.release();
    }
    // Both answered once it is durable.
    await reader.next((f) => f.id === 'list' && 'status' in f);
    await reader.next((f) => f.id === 'messages' && 'status' in f);
    await reader.next((f) => f.id === 'search' && 'status' in f);
    await reader.next((f) => f.id === 'export' && 'status' in f);
    const list = await reader.request({ type: 'list_conversations' });
    const row = (list.data as { conversations: { id: string; last_message: string | null }[] }).conversations.find((c) => c.id === id);
    assert.ok(row?.last_message === 'while held' || row?.last_message === 'answered', JSON.stringify(row));
    await sender.next((f) => f.id === 'held' && 'status' in f);
  },
);

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

test(
  'disk full at the reply: the turn answers with the disk-full error (its user message durable and told, not left waiting); once space is back the next chat works and the service stops',
  LIMIT,
  async (t) => {
    const { dir, cleanup } = await tempDir('ra-user-commit-full-');
    t.after(cleanup);
    await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
    const disk = await fullDiskFake(t);
    let fillOnAsk = false;
    // The disk fills while the model works: the user message is written, the reply's write is refused.
    const model: Provider = {
      name: 'filling',
      async complete(): Promise<CompletionResult> {
        if (fillOnAsk) disk.set('writes');
        return { text: 'done', tool_calls: [], finish_reason: 'stop' };
      },
    };
    const service = await Service.open({ dataDir: dir, provider: () => model });
    let stopped = false;
    t.after(() => (stopped ? undefined : service.stop()));
    const conversationId = (await service.agent.chat({ message: 'first', source: { kind: 'lan' } })).conversation_id;

    fillOnAsk = true;
    const events: string[] = [];
    let outcome: unknown;
    service.agent
      .chat({ message: 'second', conversationId, source: { kind: 'lan' } }, (e) => events.push(e.event === 'chat.message' ? e.message.role : e.event))
      .then(
        () => (outcome = 'answered'),
        (error: unknown) => (outcome = error),
      );
    await waitFor(() => outcome, 'the turn to end');
    assert.match(String(outcome), /disk full/);
    assert.deepEqual(events, ['user'], 'its user message durable and told, no reply');

    fillOnAsk = false;
    disk.set('none');
    assert.equal((await service.agent.chat({ message: 'third', conversationId, source: { kind: 'lan' } })).response, 'done');
    const stored = await service.store.messages.recent(conversationId, { limit: 20 });
    assert.deepEqual(
      stored.map((m) => m.content),
      ['first', 'done', 'second', 'done', 'third', 'done'],
      "the refused reply was written once space was back (it was applied), before the next turn's",
    );
    await service.stop();
    stopped = true;
  },
);

test('a turn whose model failed while its user message waits for a sync that does not come ends when cancelled', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('ra-user-commit-stuck-');
  t.after(cleanup);
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  let asked = 0;
  const model: Provider = {
    name: 'failing',
    async complete(): Promise<CompletionResult> {
      asked++;
      if (asked > 1) throw new Error('the model broke');
      return { text: 'done', tool_calls: [], finish_reason: 'stop' };
    },
  };
  const service = await Service.open({ dataDir: dir, provider: () => model });
  const gate = await datasyncGate(t);
  t.after(async () => {
    gate.release();
    await service.stop();
  });
  const conversationId = (await service.agent.chat({ message: 'first', source: { kind: 'lan' } })).conversation_id;

  // A hung disk: the user message is written, its fdatasync never returns.
  gate.hold();
  const cancel = new AbortController();
  const events: TurnEvent[] = [];
  let outcome: unknown;
  service.agent
    .chat({ message: 'stuck', conversationId, source: { kind: 'lan' }, signal: cancel.signal }, (e) => events.push(e))
    .then(
      () => (outcome = 'answered'),
      (error: unknown) => (outcome = error),
    );
  await waitFor(() => asked === 2, 'the model asked');
  // Turns of the loop in which the failure would have been answered, had the message been durable.
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(outcome, undefined, 'nothing answered before the message is durable');
  cancel.abort();
  await waitFor(() => outcome, 'the cancelled turn to end');
  assert.match(String(outcome), /model broke/);
  assert.deepEqual(events, [], 'nothing of the turn was told');
});

test('with the user message sync held, a queued chat and its removal announce nothing that shows the unsynced message (held until it is durable); then the row is announced', LIMIT, async (t) => {
  const svc = await withService(t, { workspace: true, config: { permission_mode: 'allow' } });
  const sender = await TestClient.authed(svc.wsUrl, svc.token);
  const other = await TestClient.authed(svc.wsUrl, svc.token);
  const watcher = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(() => {
    sender.close();
    other.close();
    watcher.close();
  });
  const first = await sender.request({ type: 'chat', message: 'hello' });
  const id = (first.data as { conversation_id: string }).conversation_id;
  await received(watcher.frames, (f) => f.event === 'conversation.updated' && f.conversation_id === id && JSON.stringify(f).includes('hello'));
  const gate = await datasyncGate(t);
  const asked = svc.fake.requests.length;
  svc.fake.script({ text: 'slow', chunks: 1 }, { text: 'x', chunks: 1 });
  gate.hold();
  sender.send({ type: 'chat', id: 'held', message: 'SECRET while held', conversation_id: id });
  try {
    await svc.fake.waitFor((requests) => requests.length === asked + 1);
    watcher.frames.length = 0;
    // Another client's chat waits behind the turn, and is removed: each changes the conversation's row.
    other.send({ type: 'chat', id: 'q', message: 'queued behind', conversation_id: id, client_message_id: 'queued-1' });
    await waitFor(async () => {
      const removed = await other.request({ type: 'remove_queued', conversation_id: id, client_message_id: 'queued-1' });
      return (removed.data as { removed: boolean }).removed;
    }, 'the queued chat to be removed');
    await received(other.frames, (f) => f.id === 'q' && 'status' in f);
    // Turns of the loop in which their announcements would have reached the watcher.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const shown = watcher.frames.filter((f) => JSON.stringify(f).includes('SECRET'));
    assert.deepEqual(shown, [], 'no client is shown the message before it is durable');
  } finally {
    gate.release();
  }
  // Durable: its row is announced (its last message by then the reply, stored meanwhile).
  await received(watcher.frames, (f) => f.event === 'conversation.updated' && f.conversation_id === id);
  const answer = await sender.next((f) => f.id === 'held' && 'status' in f);
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
});
