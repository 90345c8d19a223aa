/**
 * The phone page's search field and export (src/web/chat/search-view.ts, export-view.ts) in Chromium,
 * against the real service (test/helpers/phone-rig.ts). Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { startPhoneRig, type PhonePage, type PhoneRig } from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig();
});
after(async () => {
  await rig?.close();
});

async function chatAs(client: TestClient, message: string, conversationId?: string): Promise<string> {
  const reply = await client.request({ type: 'chat', message, ...(conversationId ? { conversation_id: conversationId } : {}) });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return (reply.data as { conversation_id: string }).conversation_id;
}

/** History written by another client (a LAN socket) before the phone opens. */
async function fromAnotherClient(write: (client: TestClient) => Promise<unknown>): Promise<void> {
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  try {
    await write(other);
  } finally {
    other.close();
  }
}

/** A phone with its conversation drawer open. */
async function phoneWithDrawer(): Promise<PhonePage> {
  const phone = await rig.openPhone();
  await phone.page.locator('.drawer-toggle').click();
  return phone;
}

test('the drawer searches as you type: hits with title and the match marked, untrusted text never parsed as HTML', async () => {
  await fromAnotherClient((other) => chatAs(other, 'Trip notes: the albatross <img src=x onerror="window.__pwned=1"> flew by'));
  const phone = await phoneWithDrawer();
  try {
    const { page } = phone;
    await page.locator('.search-input').fill('albatross');
    const hits = page.locator('.search-hit');
    await hits.first().waitFor();
    assert.equal(await hits.count(), 2, 'the message and its echoed reply');
    assert.equal(await page.locator('.search-hit-title').first().innerText(), 'Trip notes: the albatross <img src=x onerror="window.__pwned=1"> flew by');
    assert.deepEqual(await page.locator('.search-hit mark').allInnerTexts(), ['albatross', 'albatross']);
    assert.match(await page.locator('.search-hit-snippet').first().innerText(), /<img src=x onerror="window\.__pwned=1">/);
    assert.equal(await page.locator('.search img').count(), 0, 'the snippet is text, not markup');
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    const searched = phone.sent.filter((f) => f.type === 'search_messages');
    assert.equal(searched.at(-1)?.query, 'albatross');

    await page.locator('.search-input').fill('albatross nowhere');
    await page.locator('.search-status', { hasText: 'No messages match.' }).waitFor();
    assert.equal(await hits.count(), 0);
    await page.locator('.search-input').fill('!!!');
    await page.locator('.search-status', { hasText: /query/ }).waitFor();
    assert.deepEqual(phone.errors, []);
  } finally {
    await phone.close();
  }
});

test('tapping a hit opens its conversation scrolled to the message, marked for a moment', async () => {
  await fromAnotherClient(async (other) => {
    const id = await chatAs(other, 'a long conversation about gardening');
    await chatAs(other, 'the secret word is marigoldtarget', id);
    for (let i = 0; i < 30; i++) await chatAs(other, `later message number ${i} with enough text to fill the screen of a phone`, id);
    await chatAs(other, 'an unrelated recent chat');
  });
  const phone = await phoneWithDrawer();
  try {
    const { page } = phone;
    await page.locator('.search-input').fill('marigoldtarget');
    await page.locator('.search-hit', { hasText: 'You' }).click();
    await page.locator('.title', { hasText: 'a long conversation about gardening' }).waitFor();
    const found = page.locator('.message.found');
    await found.waitFor();
    assert.match(await found.innerText(), /the secret word is marigoldtarget/);
    // Scrolled to it: the marked message is inside the visible part of the transcript, not at its end.
    const inView = await page.evaluate(() => {
      const box = document.querySelector('.messages')!.getBoundingClientRect();
      const node = document.querySelector('.message.found')!.getBoundingClientRect();
      return node.top >= box.top - 1 && node.bottom <= box.bottom + 1;
    });
    assert.ok(inView, 'the message found is on screen');
    assert.equal(await page.locator('.drawer-open').count(), 0, 'the drawer closed');
    assert.deepEqual(phone.errors, []);
  } finally {
    await phone.close();
  }
});

test('Export downloads the conversation as Markdown where the browser cannot share files', async () => {
  await fromAnotherClient((other) => chatAs(other, 'export me, please'));
  const phone = await phoneWithDrawer();
  try {
    const { page } = phone;
    await page.locator('.conversation-open', { hasText: 'export me, please' }).click();
    await page.locator('.message.assistant', { hasText: 'echo: export me, please' }).waitFor();
    await page.locator('.export-toggle').click();
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('.export-markdown').click()]);
    assert.equal(download.suggestedFilename(), 'export me please.md');
    const text = await readFile((await download.path())!, 'utf8');
    assert.match(text, /^# export me, please\n/);
    assert.match(text, /## Assistant · .*\n\necho: export me, please/);
    const [json] = await Promise.all([
      page.waitForEvent('download'),
      page
        .locator('.export-toggle')
        .click()
        .then(() => page.locator('.export-json').click()),
    ]);
    const doc = JSON.parse(await readFile((await json.path())!, 'utf8')) as { version: number; messages: { content: string }[] };
    assert.equal(doc.version, 1);
    assert.deepEqual(
      doc.messages.map((m) => m.content),
      ['export me, please', 'echo: export me, please'],
    );
    assert.deepEqual(phone.errors, []);
  } finally {
    await phone.close();
  }
});
