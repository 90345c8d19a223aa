/**
 * The phone page, a day's use (s24, phone24a), against real parts (test/helpers/phone-rig.ts):
 * - (the reply that grows below and the "to the end" button: phone-scroll.test.ts)
 * - a table's headers and cells wrap between words, never inside one, and a long token does not widen
 *   the page;
 * - a tool waiting for its permission prompt says "waiting for you" (readable in both themes), and the
 *   prompt's meta line reads "Asked from … · In “title”", without the title inside that conversation.
 * Screens at 360 and 390 px, light and dark, are saved under test-output/screens/day-*. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { contrastScript } from '../helpers/page-contrast';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { saveScreens } from '../helpers/phone-screens';
import { TestClient } from '../helpers/ws-client';

const TITLE = 'another conversation';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'ask' });
  // Another conversation, for the prompt to be seen from.
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  await other.request({ type: 'chat', message: TITLE }, 30_000);
  other.close();
});

after(async () => {
  await rig?.close();
});

async function openConversation(page: Page, title: string): Promise<void> {
  await page.locator('.drawer-toggle').click();
  await page.locator('.conversation-open', { hasText: title }).click();
}

const TABLE = [
  '| Attempt | Backoff (seconds) | Outcome | Retried by | Notes |',
  '| --- | --- | --- | --- | --- |',
  '| 1 | 0.5 | Connection refused | scheduler | first try after the deploy |',
  '| 2 | 1.0 | Timeout | scheduler | https://example.com/a/very/long/path/that/never/ends/0123456789abcdef0123456789abcdef0123456789abcdef |',
  '| 3 | 2.0 | Succeeded | person | 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef |',
].join('\n');

/** The words of each header and cell drawn on more than one line (a word cut in two draws two boxes). */
const BROKEN_WORDS = `(() => {
  const broken = [];
  for (const cell of document.querySelectorAll('.message.assistant table th, .message.assistant table td')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent;
      for (const match of text.matchAll(/\\S+/g)) {
        if (match[0].length > 30) continue;
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top)));
        if (lines.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
})()`;

test("a table's headers and cells wrap between words, never inside one; a long token does not widen the page", async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await page.setViewportSize({ width: 360, height: 780 });
  rig.fake.script({ text: `The attempts:\n\n${TABLE}\n\nThat is all.` });
  const input = page.locator('.composer-input');
  await input.fill('show the attempts as a table');
  await input.press('Enter');
  await page.waitForFunction(() => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('That is all.') && !document.querySelector('.message.streaming'));
  for (const width of [360, 390]) {
    await page.setViewportSize({ width, height: 780 });
    assert.deepEqual(await page.evaluate(BROKEN_WORDS), [], `${width} px: no word cut inside`);
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      view: window.innerWidth,
      list: document.querySelector('.messages')!.scrollWidth,
      listBox: document.querySelector('.messages')!.clientWidth,
    }));
    assert.ok(widths.page <= widths.view, `${width} px: the page is not widened (${widths.page} > ${widths.view})`);
    assert.ok(widths.list <= widths.listBox, `${width} px: the message list does not scroll sideways (${widths.list} > ${widths.listBox})`);
  }
  await saveScreens(page, 'day-table', (p) =>
    p
      .locator('.message.assistant table')
      .last()
      .evaluate((el) => el.scrollIntoView({ block: 'center' })),
  );
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a tool whose prompt waits says "waiting for you" in both themes, then running and done; the prompt names another conversation, not its own', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'waiting.txt', content: 'one\n' } }] }, { text: 'Wrote waiting.txt.' });
  const input = page.locator('.composer-input');
  await input.fill('Plan the retry change for the uploader');
  await input.press('Enter');
  const prompt = page.locator('.permission-card');
  await prompt.waitFor();
  const status = page.locator('.tool-card[data-tool="write_file"] .tool-status');
  await page.waitForFunction(() => document.querySelector('.tool-card[data-tool="write_file"] .tool-status')?.getAttribute('data-status') === 'waiting');
  assert.equal(await status.innerText(), 'waiting for you');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const ratio = (await page.evaluate(contrastScript('.tool-card[data-tool="write_file"] .tool-status'))) as number;
    assert.ok(ratio >= 4.5, `${scheme}: "waiting for you" at ${ratio.toFixed(2)}:1`);
  }
  await page.emulateMedia({ colorScheme: 'light' });
  // Inside its own conversation the prompt does not name it.
  await page.waitForFunction(() => document.querySelector('.permission-card .permission-source')?.textContent === 'Asked from this device');
  await saveScreens(page, 'day-waiting', (p) => p.locator('.tool-card[data-tool="write_file"]').evaluate((el) => el.scrollIntoView({ block: 'start' })));

  // In another conversation it does, after a separator.
  await openConversation(page, TITLE);
  await page.waitForFunction(() => document.querySelector('.permission-card .permission-source')?.textContent === 'Asked from this device · In “Plan the retry change for the uploader”');
  await saveScreens(page, 'day-prompt-elsewhere');
  await openConversation(page, 'Plan the retry change');
  await page.waitForFunction(() => document.querySelector('.tool-card[data-tool="write_file"] .tool-status')?.getAttribute('data-status') === 'waiting');
  assert.equal(await page.locator('.permission-card .permission-source').innerText(), 'Asked from this device');

  await prompt.locator('button[data-decision="allow"]').click();
  await page.waitForFunction(() => document.querySelector('.tool-card[data-tool="write_file"] .tool-status')?.getAttribute('data-status') === 'ok');
  assert.equal(await status.innerText(), 'ok');
  await page.locator('.message.assistant', { hasText: 'Wrote waiting.txt.' }).waitFor();
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
