// conversation.updated: every client hears when a conversation gets a message (the user's, then the
// reply), whoever sent it, so a conversation continued from the phone shows live in the editor.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useService } from '../helpers/service-fixture';
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
