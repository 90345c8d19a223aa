/**
 * The chat follows (issue 23, "The chat does not follow"): while the reader is at the bottom, new content
 * keeps the newest message in view; scrolled up, a "Jump to latest (N new)" pill counts what arrived
 * below, and "New reply below" when a reply on screen grows past the view's bottom (s24); more than a
 * screen from the end, a "to the end" button; the reader's own message (also one waiting offline) and an
 * undo's preview always come into view.
 * Measured with getBoundingClientRect against the message scroller. Real parts: test/helpers/phone-rig.ts.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { saveScreens } from '../helpers/phone-screens';
import { TestClient } from '../helpers/ws-client';

let rig: PhoneRig;
let other: TestClient;
let conversationId: string;
const TITLE = 'a long conversation to scroll';

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'allow' });
  other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const long = 'a line long enough to take some room on a phone screen, '.repeat(6);
  const first = await other.request({ type: 'chat', message: TITLE }, 30_000);
  conversationId = (first.data as { conversation_id: string }).conversation_id;
  for (let i = 0; i < 6; i += 1) await other.request({ type: 'chat', conversation_id: conversationId, message: `${i} ${long}` }, 30_000);
});

after(async () => {
  other?.close();
  await rig?.close();
});

/** Whether the element's box lies inside the message scroller's visible box (at least its last 20 px). */
function inView(node: Locator): Promise<boolean> {
  return node.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const view = document.querySelector('.messages')!.getBoundingClientRect();
    return box.bottom - 20 >= view.top && box.bottom <= view.bottom + 1;
  });
}

async function scrollUp(page: Page): Promise<void> {
  await scrollTo(page, 0);
}

async function scrollTo(page: Page, top: number | 'end-100'): Promise<void> {
  await page.locator('.messages').evaluate((el, to) => {
    el.scrollTop = to === 'end-100' ? el.scrollHeight - el.clientHeight - 100 : to;
    el.dispatchEvent(new Event('scroll'));
  }, top);
}

async function openConversation(page: Page): Promise<void> {
  await page.locator('.drawer-toggle').click();
  await page.locator('.conversation-open', { hasText: TITLE }).click();
  await page.locator('.message.assistant').nth(6).waitFor();
}

test('at the bottom the chat follows; scrolled up a pill counts what is new and jumps to it', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await openConversation(page);
  assert.ok(await inView(page.locator('.message-list > .message').last()), 'the history opens at its end');

  await other.request({ type: 'chat', conversation_id: conversationId, message: 'from elsewhere while at the bottom' }, 30_000);
  const followed = page.locator('.message.assistant', { hasText: 'echo: from elsewhere while at the bottom' });
  await followed.waitFor();
  assert.ok(await inView(followed), 'a reply that arrives while at the bottom is in view');

  await scrollUp(page);
  await other.request({ type: 'chat', conversation_id: conversationId, message: 'from elsewhere while scrolled up' }, 30_000);
  const unseen = page.locator('.message.assistant', { hasText: 'echo: from elsewhere while scrolled up' });
  await unseen.waitFor();
  assert.equal(await inView(unseen), false, 'the reader scrolled up stays where they were');
  const pill = page.locator('.jump-latest');
  await pill.waitFor();
  assert.equal(await pill.innerText(), 'Jump to latest (2 new)', "the other client's message and its reply");
  assert.ok(await inView(pill), 'the pill is on screen');
  await pill.click();
  assert.ok(await inView(unseen), 'the pill jumps to the newest');
  assert.equal(await pill.isVisible(), false);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("the reader's own message comes into view when scrolled up, online and offline, and so does an undo's preview", async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await openConversation(page);
  const input = page.locator('.composer-input');

  await scrollUp(page);
  await input.fill('my own message sent while scrolled up');
  await input.press('Enter');
  const reply = page.locator('.message.assistant', { hasText: 'echo: my own message sent while scrolled up' });
  await reply.waitFor();
  assert.ok(await inView(page.locator('.message.user', { hasText: 'my own message sent while scrolled up' })), 'my message is in view');
  assert.ok(await inView(reply), 'and so is its reply, which follows it');

  await scrollUp(page);
  await phone.context.setOffline(true);
  await page.locator('.connection:not([data-state="open"])').waitFor();
  await input.fill('typed offline while scrolled up');
  await input.press('Enter');
  const waiting = page.locator('.message.user.pending', { hasText: 'typed offline while scrolled up' });
  await waiting.waitFor();
  assert.ok(await inView(waiting), 'the waiting-to-send bubble is in view');
  await phone.context.setOffline(false);
  await page.locator('.connection[data-state="open"]').waitFor({ timeout: 20_000 });
  await page.locator('.message.assistant', { hasText: 'echo: typed offline while scrolled up' }).waitFor();

  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'scrolled.txt', content: 'one\ntwo\nthree\n' } }] }, { text: 'Wrote scrolled.txt.' });
  await input.fill('write a file');
  await input.press('Enter');
  const written = page.locator('.message.assistant', { hasText: 'Wrote scrolled.txt.' });
  await written.locator('.undo-turn').waitFor();
  // The reply's undo button at the very bottom edge: the preview opens below it.
  await written.locator('.undo-turn').evaluate((el) => el.scrollIntoView({ block: 'end' }));
  await written.locator('.undo-turn').click();
  const confirm = page.locator('.undo-panel .undo-confirm');
  await confirm.waitFor();
  assert.ok(await inView(confirm), 'the undo preview and its button are in view');
  await confirm.click();
  const restored = page.locator('.undo-panel .undo-file[data-outcome="deleted"], .undo-panel .undo-file[data-outcome="restored"]').first();
  await restored.waitFor();
  assert.ok(await inView(restored), "the undo's result is in view");
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a reply that grows and finishes below a reader scrolled up brings the pill; the pill goes to its end and follows again', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await openConversation(page);
  const words = Array.from({ length: 240 }, (_, i) => `word${i}`).join(' ');
  rig.fake.script({ text: `${words} THE-END`, chunks: 60, chunkDelayMs: 80 });
  const answer = other.request({ type: 'chat', conversation_id: conversationId, message: 'a long reply, please', stream: true }, 30_000);
  const reply = page.locator('.message.assistant.streaming');
  await page.waitForFunction(() => / word20\b/.test(document.querySelector('.message.assistant.streaming')?.textContent ?? ''));
  // The reader was following; now they scroll back up to read what came before.
  await scrollTo(page, 0);
  assert.equal(await inView(reply), false, 'scrolled up: the end of the reply is below the view');
  const pill = page.locator('.jump-latest');
  await pill.waitFor();
  assert.equal(await pill.innerText(), 'New reply below', 'the growing reply, not a count of new messages');
  await answer;
  const done = page.locator('.message.assistant', { hasText: 'THE-END' });
  await page.waitForFunction(() => !document.querySelector('.message.streaming'));
  assert.equal(await inView(done), false, 'the reader stays where they were');
  assert.ok(await pill.isVisible(), 'the pill still says there is more below');
  await saveScreens(page, 'day-reply-below');
  await pill.click();
  assert.ok(await inView(done), "the pill goes to the reply's end");
  assert.equal(await pill.isVisible(), false);

  // Following again: the next message is in view without scrolling.
  await other.request({ type: 'chat', conversation_id: conversationId, message: 'after the jump' }, 30_000);
  const next = page.locator('.message.assistant', { hasText: 'echo: after the jump' });
  await next.waitFor();
  assert.ok(await inView(next), 'following again after the pill');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('more than a screen from the end, a named 44 px "to the end" button scrolls there and follows; near the end it is not there', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await openConversation(page);
  const toEnd = page.locator('.to-end');
  assert.equal(await toEnd.isVisible(), false, 'at the end: no button');
  await scrollTo(page, 'end-100');
  await page.waitForTimeout(50);
  assert.equal(await toEnd.isVisible(), false, 'a little above the end: no button');
  await scrollTo(page, 0);
  await toEnd.waitFor();
  assert.equal(await page.locator('.jump-latest').isVisible(), false, 'nothing new: no pill');
  assert.equal(await toEnd.getAttribute('aria-label'), 'Scroll to the end');
  const box = (await toEnd.boundingBox())!;
  assert.ok(box.width >= 44 && box.height >= 44, `a 44 px target (${box.width}x${box.height})`);
  assert.ok(await inView(toEnd), 'on screen');
  await saveScreens(page, 'day-to-end', (p) => scrollTo(p, 0));
  await toEnd.click();
  assert.ok(await inView(page.locator('.message-list > .message').last()), 'at the end');
  await toEnd.waitFor({ state: 'hidden' });
  await other.request({ type: 'chat', conversation_id: conversationId, message: 'after the button' }, 30_000);
  const next = page.locator('.message.assistant', { hasText: 'echo: after the button' });
  await next.waitFor();
  assert.ok(await inView(next), 'following again');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
