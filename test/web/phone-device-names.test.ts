/**
 * Device names instead of "LAN" (issue 23, should-fix): the device credential knows its name, so the
 * toast of a prompt answered from a paired phone says "Allowed from <its name>", and every user message
 * says who sent it: a paired phone by its name, a script with the access token as `access token` (not
 * the transport's LAN, which the phone is on too), so another client's message
 * reads apart from the phone's own, live and after a reload; the prompt card says which phone asked and
 * the conversation's row who started it (list_conversations' `started_by`). Real parts (test/helpers/phone-rig.ts);
 * runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'ask' });
});

after(async () => {
  await rig?.close();
});

test('a paired phone is named by its device name: "Allowed from Test Pixel", and messages say who sent them', async () => {
  const owner = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const secret = ((await owner.request({ type: 'create_lan_pairing' })).data as { pairing_secret: string }).pairing_secret;
  const phone = await rig.openPhone(
    async (page) => {
      await page.addInitScript("localStorage.setItem('remote-assistant.device-name', 'Test Pixel')");
    },
    `pair=${encodeURIComponent(secret)}`,
  );
  const { page } = phone;

  rig.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Listed for you.', chunks: 1 });
  const input = page.locator('.composer-input');
  await input.fill('list it from the phone');
  await input.press('Enter');
  const card = page.locator('.permission-card');
  await card.waitFor();
  assert.equal(await card.locator('.permission-source').innerText(), 'Asked from this device', 'the prompt asked by this phone says so (not "LAN", not its own name)');
  await card.locator('button[data-decision="allow"]').click();
  // Answered here: the phone's own answer names nobody (s24: not "Allowed from Test Pixel" on the phone that allowed).
  const outcome = page.locator('.permission-outcome', { hasText: 'Allowed' });
  await outcome.waitFor();
  assert.doesNotMatch(await outcome.innerText(), /from/, 'its own answer names no one');
  await page.locator('.message.assistant', { hasText: 'Listed for you.' }).waitFor();

  const list = await owner.request({ type: 'list_conversations' });
  const conversation = (list.data as { conversations: { id: string; title: string }[] }).conversations.find((c) => c.title === 'list it from the phone')!;
  rig.fake.script({ text: 'Answered the script.', chunks: 1 });
  await owner.request({ type: 'chat', conversation_id: conversation.id, message: 'a word from a script' }, 20_000);
  await page.locator('.message.assistant', { hasText: 'Answered the script.' }).waitFor();

  const senders = async () =>
    page.locator('.message.user').evaluateAll((nodes) => nodes.map((n) => `${n.querySelector('.plain')?.textContent} | ${n.querySelector('.message-from')?.textContent ?? ''}`));
  // Its own message names no sender; the script's is "this computer", never the credential's kind "access token" (s24).
  const expected = ['list it from the phone | ', 'a word from a script | from this computer'];
  assert.deepEqual(await senders(), expected, 'live');
  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  await page.locator('.message.assistant', { hasText: 'Answered the script.' }).waitFor();
  assert.deepEqual(await senders(), expected, 'after a reload');

  // The conversation's row in the list says who started it: the phone's name, not the transport.
  await owner.request({ type: 'chat', message: 'started by a script' }, 20_000);
  const rowMeta = async (title: string) => {
    await page.locator('.drawer-toggle').click();
    const meta = await page.locator('.conversation', { hasText: title }).locator('.conversation-meta').innerText();
    await page.keyboard.press('Escape');
    return meta;
  };
  assert.doesNotMatch(await rowMeta('list it from the phone'), /·/, 'a conversation this phone started names no starter');
  assert.match(await rowMeta('started by a script'), /· this computer$/, 'a script holding the access token is "this computer", not "LAN" nor "access token"');
  const rows = (await owner.request({ type: 'list_conversations' })).data as { conversations: { title: string; started_by?: string | null }[] };
  assert.equal(rows.conversations.find((c) => c.title === 'list it from the phone')?.started_by, 'Test Pixel');
  assert.equal(rows.conversations.find((c) => c.title === 'started by a script')?.started_by, 'access token');
  owner.close();
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
