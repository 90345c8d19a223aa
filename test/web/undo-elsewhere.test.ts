/**
 * Undo done from another client (s33, updates33): the service tells every client that may see the
 * conversation (`turn.undone`), and a page showing the turn marks its reply undone at once, without a
 * turn's end or a reload (calm33 left that to the next turn that wrote files). Real parts: the service in
 * process with the fake OpenAI provider, a temp workspace, Debian's chromium at a phone's size, and a
 * second client on the service's WebSocket that undoes. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'allow' });
});

after(async () => {
  await rig?.close();
});

test('a turn undone by another client is marked undone on the page showing it, its Undo button gone, without asking list_turn_changes', async () => {
  const phone = await rig.openPhone();
  const { page, sent } = phone;
  const input = page.locator('.composer-input');
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'made.txt', content: 'made\n' } }] }, { text: 'Made the file.' });
  await input.fill('make a file');
  await input.press('Enter');
  const reply = page.locator('.message.assistant', { hasText: 'Made the file.' });
  await reply.locator('.undo-turn').waitFor();
  assert.equal(await readFile(join(rig.workspace.dir, 'made.txt'), 'utf8'), 'made\n');
  const messageId = await reply.getAttribute('data-message-id');
  assert.ok(messageId);

  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  try {
    const conversations = (await other.request({ type: 'list_conversations' })).data as { conversations: { id: string }[] };
    const asked = sent.filter((frame) => frame.type === 'list_turn_changes').length;
    const undone = await other.request({ type: 'undo_turn', conversation_id: conversations.conversations[0].id, message_id: messageId, confirm: true });
    assert.equal(undone.status, 'ok', JSON.stringify(undone));
    await reply.locator('.undone-note').waitFor({ timeout: 5_000 });
    assert.equal(await reply.locator('.undo-turn').count(), 0, 'no button left to undo it again');
    assert.equal(sent.filter((frame) => frame.type === 'list_turn_changes').length, asked, 'told by the event, not by asking');
  } finally {
    other.close();
  }
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
