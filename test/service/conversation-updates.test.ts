// conversation.updated: every client hears when a conversation gets a message (the user's, then the
// reply), whoever sent it, so a conversation continued from the phone shows live in the editor. The
// reply's row goes out at the turn's end, with the state that end leaves (s33, updates33).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventHub } from '../../src/commands/event-hub';
import type { ClientSession } from '../../src/commands/session';
import { canAccess } from '../../src/protocol/sources';
import { useService } from '../helpers/service-fixture';
import { waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const svc = useService({ config: { model: 'fake-model' } });

test('a conversation started and continued by one client is announced to the others, message and reply', async () => {
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const first = await phone.request({ type: 'chat', message: 'from the phone' });
    const id = (first.data as { conversation_id: string }).conversation_id;
    const updates = () => editor.frames.filter((f) => f.event === 'conversation.updated' && f.conversation_id === id);
    const rows: { state: string; last_message: string }[] = [];
    for (let i = 0; i < 2; i += 1) rows.push((await editor.next((f) => f.event === 'conversation.updated' && f.conversation_id === id)).conversation as { state: string; last_message: string });
    // The user message's row is read once it is durable: the reply may be stored by then (one sync for both).
    assert.deepEqual(
      rows.map((r) => r.state),
      ['running', 'idle'],
      'two updates: the stored message, then the reply with the turn over (one row)',
    );
    assert.match(rows[0].last_message, /from the phone/);
    assert.equal(rows[1].last_message, 'echo: from the phone');
    assert.equal(updates().length, 0);

    await phone.request({ type: 'chat', message: 'and more', conversation_id: id });
    const update = await editor.next((f) => f.event === 'conversation.updated' && f.conversation_id === id);
    assert.equal(update.source, 'ws');
    const history = await editor.request({ type: 'get_messages', conversation_id: id });
    assert.deepEqual(
      (history.data as { messages: { content: string }[] }).messages.map((m) => m.content),
      ['from the phone', 'echo: from the phone', 'and more', 'echo: and more'],
    );
  } finally {
    phone.close();
    editor.close();
  }
});

test('with no client to hear it, a turn reads no conversation row for conversation.updated; a client connected hears it again', async () => {
  const { store, agent } = svc.service;
  const realOf = store.usage.ofConversation.bind(store.usage);
  let rowsMade = 0;
  // conversationOf (the event's row) is what reads the conversation's usage: counted as the rows made.
  store.usage.ofConversation = (id) => {
    rowsMade += 1;
    return realOf(id);
  };
  try {
    // The clients of the test before are closed, but the service may not have seen their sockets close yet.
    await waitFor(() => !svc.service.events.reaches('conversation.updated'), "the test before's clients to be gone");
    const { conversation_id: id } = await agent.chat({ message: 'nobody listens', source: { kind: 'lan' } });
    await agent.idle();
    assert.equal(rowsMade, 0, 'no row made for no one (the message, the reply and the state changes)');

    const editor = await TestClient.authed(svc.wsUrl, svc.token);
    try {
      await agent.chat({ message: 'now someone does', conversationId: id, source: { kind: 'lan' } });
      const update = await editor.next((f) => f.event === 'conversation.updated' && f.conversation_id === id);
      assert.match((update.conversation as { last_message: string }).last_message, /now someone does/, 'the message, or already its reply (events wait for its commit)');
      assert.ok(rowsMade > 0);
    } finally {
      editor.close();
    }
  } finally {
    store.usage.ofConversation = realOf;
  }
});

type Row = { state: string; last_message: string; queued: unknown[] };
type Frame = Record<string, unknown>;
const rowOf = (f: Frame) => f.conversation as Row;

/** A conversation the phone started, its first turn over and both clients' frames cleared. */
async function started(phone: TestClient, editor: TestClient): Promise<string> {
  const id = ((await phone.request({ type: 'chat', message: 'start' })).data as { conversation_id: string }).conversation_id;
  await editor.next((f) => f.event === 'turn.ended' && f.conversation_id === id);
  editor.frames.length = 0;
  phone.frames.length = 0;
  return id;
}

test('a 0-tool turn: a client that does not follow hears two conversation.updated and turn.ended, the idle row (the reply) before turn.ended', async () => {
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const id = await started(phone, editor);
    const answer = await phone.request({ type: 'chat', message: 'two', conversation_id: id });
    assert.equal(answer.status, 'ok');
    await waitFor(() => editor.frames.some((f) => f.event === 'turn.ended' && f.conversation_id === id), 'turn.ended');
    // Anything sent later than turn.ended would have come in the same burst: one more round trip lets it arrive.
    await editor.request({ type: 'get_config' });
    const seen = editor.frames.filter((f) => f.conversation_id === id);
    assert.deepEqual(
      seen.map((f) => (f.event === 'conversation.updated' ? `updated ${rowOf(f).state}` : String(f.event))),
      ['updated running', 'updated idle', 'turn.ended'],
    );
    assert.equal(rowOf(seen[1]).last_message, 'echo: two');
    // The sender, a follower: its own turn's events and the two rows.
    const sender = phone.frames.filter((f) => f.conversation_id === id && f.event !== undefined).map((f) => String(f.event));
    assert.equal(sender.filter((e) => e === 'conversation.updated').length, 2, sender.join(', '));
  } finally {
    phone.close();
    editor.close();
  }
});

test("a message waiting behind a turn: the first reply is announced at its turn's end, still running, and only the last turn's end says idle", async () => {
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const id = await started(phone, editor);
    const asked = svc.fake.requests.length;
    svc.fake.script({ text: 'slow answer', delayMs: 600 });
    const first = phone.request({ type: 'chat', message: 'first', conversation_id: id });
    await svc.fake.waitFor((requests) => requests.length > asked);
    const second = phone.request({ type: 'chat', message: 'second', conversation_id: id });
    await Promise.all([first, second]);
    await waitFor(() => editor.frames.filter((f) => f.event === 'turn.ended' && f.conversation_id === id).length === 2, 'both turns to end');
    await editor.request({ type: 'get_config' });
    const rows = editor.frames.filter((f) => f.event === 'conversation.updated' && f.conversation_id === id).map(rowOf);
    const idle = rows.filter((r) => r.state === 'idle');
    assert.equal(idle.length, 1, JSON.stringify(rows));
    assert.equal(rows.at(-1)!.state, 'idle');
    assert.equal(rows.at(-1)!.last_message, 'echo: second');
    assert.ok(
      rows.some((r) => r.state === 'running' && r.last_message === 'slow answer'),
      `the first reply shown while the second waits or runs: ${JSON.stringify(rows)}`,
    );
  } finally {
    phone.close();
    editor.close();
  }
});

test("a webhook account's conversation continued by a person: the account hears the turn's end with its own source, the person's clients with theirs", async () => {
  const heard: Frame[] = [];
  const bot = svc.service.openSession({ source: { kind: 'webhook', account: 'shop' }, canAnswerPermissions: false, send: (event) => void heard.push(event as Frame) });
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const { conversation_id: id } = await svc.service.agent.chat({ message: 'from the shop', source: { kind: 'webhook', account: 'shop' } });
    const idleIn = (frames: Frame[]) => frames.some((f) => f.event === 'conversation.updated' && f.conversation_id === id && rowOf(f).state === 'idle');
    await waitFor(() => idleIn(heard) && idleIn(editor.frames), "the shop's turn over");
    heard.length = 0;
    editor.frames.length = 0;
    const answer = await editor.request({ type: 'chat', message: 'a person answers', conversation_id: id });
    assert.equal(answer.status, 'ok');
    await editor.request({ type: 'get_config' });
    const botRows = heard.filter((f) => f.event === 'conversation.updated' && f.conversation_id === id);
    assert.deepEqual(
      botRows.map((f) => [f.source, rowOf(f).state, rowOf(f).last_message]),
      [['webhook:shop', 'idle', 'echo: a person answers']],
      "not the person's messages with their source; the turn's end with its own, the row as it is",
    );
    const editorRows = editor.frames.filter((f) => f.event === 'conversation.updated' && f.conversation_id === id);
    assert.deepEqual(
      editorRows.map((f) => [f.source, rowOf(f).state]),
      [
        ['ws', 'running'],
        ['ws', 'idle'],
      ],
    );
  } finally {
    bot.close();
    editor.close();
  }
});

test('an observer of some events hears only those; reaches() tells whether anyone would hear an event', () => {
  const hub = new EventHub();
  const heard: string[] = [];
  const all: string[] = [];
  hub.observe((event) => heard.push(event.event), new Set(['turn.ended'] as const));
  assert.equal(hub.reaches('conversation.updated'), false, 'nobody: the only observer taps turn.ended');
  assert.equal(hub.reaches('turn.ended'), true);
  const stop = hub.observe((event) => all.push(event.event));
  assert.equal(hub.reaches('conversation.updated'), true, 'an observer of every event');
  stop();
  const sent: string[] = [];
  const session = { id: 's', source: { kind: 'webhook', account: 'shop' }, canAnswerPermissions: false, send: (event: { event: string }) => sent.push(event.event) } as unknown as ClientSession;
  const remove = hub.add(session);
  assert.equal(hub.reaches('conversation.updated'), true, 'a session');
  assert.equal(
    hub.reaches('conversation.updated', (s) => canAccess(s.source, 'lan')),
    false,
    'no session the filter lets hear it',
  );
  hub.broadcast({ event: 'conversation.updated', conversation_id: 'c', source: 'webhook:shop', conversation: {} as never });
  hub.broadcast({ event: 'turn.ended', conversation_id: 'c', turn_id: 't', outcome: 'answered' } as never);
  assert.deepEqual(heard, ['turn.ended']);
  assert.deepEqual(all, []);
  assert.deepEqual(sent, ['conversation.updated', 'turn.ended']);
  remove();
});
