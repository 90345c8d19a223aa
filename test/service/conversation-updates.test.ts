// conversation.updated: every client hears when a conversation gets a message (the user's, then the
// reply), whoever sent it, so a conversation continued from the phone shows live in the editor.
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
    const states: unknown[] = [];
    for (let i = 0; i < 3; i += 1) states.push(((await editor.next((f) => f.event === 'conversation.updated' && f.conversation_id === id)).conversation as { state: string }).state);
    assert.deepEqual(states, ['running', 'running', 'idle'], 'three updates: the stored message, the stored reply, then the turn over');
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
