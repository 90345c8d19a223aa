/**
 * "Undo this turn" on the phone page (src/web/chat/undo-view.ts), against real parts: the service in
 * process with the fake OpenAI provider making real tool calls in a temp workspace, media/ served,
 * Debian's chromium at a phone's size. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
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

test("the phone shows the diff of what undo will restore, then restores the turn's files", async () => {
  const ws = rig.workspace.dir;
  await writeFile(join(ws, 'page.txt'), 'kept line\nbefore the turn\n');
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  rig.fake.script(
    { tool_calls: [{ name: 'write_file', arguments: { path: 'page.txt', content: 'kept line\nwritten by the turn\n' } }] },
    { tool_calls: [{ name: 'write_file', arguments: { path: 'made-by-turn.txt', content: 'new\n' } }] },
    { tool_calls: [{ name: 'run_command', arguments: { command: 'echo side effect' } }] },
    { text: 'All three done.' },
  );
  const answer = await other.request({ type: 'chat', message: 'undo me from the phone' }, 30_000);
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  other.close();

  const phone = await rig.openPhone();
  const { page } = phone;
  await page.locator('.drawer-toggle').click();
  await page.locator('.conversation-open', { hasText: 'undo me from the phone' }).click();
  const reply = page.locator('.message.assistant', { hasText: 'All three done.' });
  await reply.locator('.undo-turn').click();

  const panel = page.locator('.undo-panel');
  await panel.locator('.undo-file[data-status="will_restore"]').first().waitFor();
  const pageFile = panel.locator('.undo-file', { hasText: 'page.txt' });
  assert.equal(await pageFile.locator('.diff-line[data-kind="del"] .diff-text').innerText(), 'written by the turn');
  assert.equal(await pageFile.locator('.diff-line[data-kind="add"] .diff-text').innerText(), 'before the turn');
  assert.match(await panel.locator('.undo-file', { hasText: 'made-by-turn.txt' }).innerText(), /will be deleted/);
  const notReversible = await panel.locator('.undo-not-reversible').innerText();
  assert.match(notReversible, /Ran echo side effect/, 'what the call did, in words');
  assert.doesNotMatch(notReversible, /run_command/, 'not its machine name');
  assert.equal(await readFile(join(ws, 'page.txt'), 'utf8'), 'kept line\nwritten by the turn\n', 'the preview changed nothing');

  await panel.locator('.undo-confirm').click();
  await panel.locator('.undo-file[data-outcome="restored"]').waitFor();
  assert.equal(await readFile(join(ws, 'page.txt'), 'utf8'), 'kept line\nbefore the turn\n');
  assert.equal(existsSync(join(ws, 'made-by-turn.txt')), false);
  assert.equal(await reply.locator('.undo-turn').count(), 0, 'an undone turn offers no second undo');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('after a reload, an undone turn reads as undone: its reply is marked and its write card is not a plain "ok"', async () => {
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'greet.js', content: 'export const hi = 1;\n' } }] }, { text: 'Done. Created greet.js' });
  const answer = await other.request({ type: 'chat', message: 'make greet, then undo it elsewhere' }, 30_000);
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  const conversationId = (answer.data as { conversation_id: string }).conversation_id;
  const turns = await other.request({ type: 'list_turn_changes', conversation_id: conversationId });
  const messageId = (turns.data as { turns: { message_id: string }[] }).turns[0].message_id;
  const undone = await other.request({ type: 'undo_turn', conversation_id: conversationId, message_id: messageId, confirm: true });
  assert.equal(undone.status, 'ok', JSON.stringify(undone));
  other.close();

  const phone = await rig.openPhone();
  const { page } = phone;
  await page.locator('.drawer-toggle').click();
  await page.locator('.conversation-open', { hasText: 'make greet, then undo it elsewhere' }).click();
  const reply = page.locator('.message.assistant', { hasText: 'Done. Created greet.js' });
  await reply.locator('.undone-note').waitFor();
  assert.match(await reply.locator('.undone-note').innerText(), /Undone/);
  assert.equal(await reply.locator('.undo-turn').count(), 0, 'no undo offered twice');
  const card = page.locator('.tool-card[data-tool="write_file"]');
  assert.equal(await card.getAttribute('data-undone'), 'true');
  assert.equal(await card.locator('.tool-status').innerText(), 'ok · undone');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
