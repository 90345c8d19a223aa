/**
 * What the assistant writes before a tool call (issue 23, "Text is lost"): shown live, and kept: after a
 * reload the history shows it before the tool's card, the export and search have it, the model is given
 * it back with its calls (one assistant message), and the turn's reply (undo's) is still the final one.
 * Against real parts (test/helpers/phone-rig.ts). Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
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

const SAID = 'I will create greet.js with the helpers';

test("text written before a tool call is kept: history after a reload, export, search, the model's next call", async () => {
  rig.fake.script({ text: SAID, tool_calls: [{ name: 'write_file', arguments: { path: 'greet.js', content: 'export const hi = 1;\n' } }] }, { text: 'Done. Created greet.js' });
  const phone = await rig.openPhone();
  const { page } = phone;
  const input = page.locator('.composer-input');
  await input.fill('make greet.js please');
  await input.press('Enter');
  await page.locator('.message.assistant', { hasText: 'Done. Created greet.js' }).waitFor();
  await page.locator('.message.assistant', { hasText: SAID }).waitFor();

  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  await page.locator('.drawer-toggle').click();
  await page.locator('.conversation-open', { hasText: 'make greet.js please' }).click();
  await page.locator('.message.assistant', { hasText: 'Done. Created greet.js' }).waitFor();
  const order = await page.locator('.message-list > *').evaluateAll((nodes) => nodes.map((n) => (n.classList.contains('tool-card') ? 'tool' : (n.textContent ?? '').trim().slice(0, 40))));
  const said = order.findIndex((text) => text.startsWith(SAID));
  assert.ok(said >= 0, `the text before the call is in the history after a reload: ${JSON.stringify(order)}`);
  assert.equal(order[said + 1], 'tool', `the tool's card follows it: ${JSON.stringify(order)}`);

  const probe = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const list = await probe.request({ type: 'list_conversations' });
  const conversation = (list.data as { conversations: { id: string; title: string }[] }).conversations.find((c) => c.title === 'make greet.js please')!;
  const exported = await probe.request({ type: 'export_conversation', conversation_id: conversation.id, format: 'markdown' });
  assert.match((exported.data as { text: string }).text, new RegExp(`## Assistant · [^\\n]+\\n\\n${SAID}`));
  const found = await probe.request({ type: 'search_messages', query: 'greet helpers' });
  assert.ok(
    (found.data as { hits: { conversation_id: string; role: string }[] }).hits.some((h) => h.conversation_id === conversation.id && h.role === 'assistant'),
    JSON.stringify(found.data),
  );
  const turns = await probe.request({ type: 'list_turn_changes', conversation_id: conversation.id });
  const messages = await probe.request({ type: 'get_messages', conversation_id: conversation.id });
  const reply = (messages.data as { messages: { id: string; content: string }[] }).messages.find((m) => m.content === 'Done. Created greet.js')!;
  assert.equal((turns.data as { turns: { message_id: string | null }[] }).turns[0]?.message_id, reply.id, 'undo names the final reply, not the text before the call');
  probe.close();

  // The model's second call saw the text once, with its tool call: one assistant message, as it wrote it.
  const second = rig.fake.requests.at(-1)!.body as { messages: { role: string; content: string | null; tool_calls?: unknown[] }[] };
  const assistants = second.messages.filter((m) => m.role === 'assistant');
  assert.equal(assistants.length, 1, JSON.stringify(second.messages));
  assert.equal(assistants[0]!.content, SAID);
  assert.equal(assistants[0]!.tool_calls?.length, 1);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
