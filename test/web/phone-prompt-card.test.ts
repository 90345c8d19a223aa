/**
 * The prompt card living beside the chat (issue 23, should-fix): it does not cover the reply above it,
 * "Deny with this note" is not under the message box, at 320 px the diff is readable (not two lines in a
 * nested scroller) and the message box keeps a usable width; "Always allow" on a command flagged ⚠ asks
 * once more, showing the rule; the command's time limit reads as a limit. Measured in real Chromium
 * (test/helpers/phone-rig.ts); screenshots at 390 and 320 px, light and dark, in test-output/screens/.
 * Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { sendMessage as send, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

const SCREENS = resolve('test-output/screens');
const numbered = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join('');

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'ask' });
  await mkdir(SCREENS, { recursive: true });
});

after(async () => {
  await rig?.close();
});

interface Box {
  top: number;
  bottom: number;
  left: number;
  right: number;
  width: number;
  height: number;
}
interface Layout {
  said?: Box;
  messages?: Box;
  cards?: Box;
  composer?: Box;
  input?: Box;
  visibleLines: number;
  width: number;
  scrollWidth: number;
}

/** Where things are, in CSS px of the viewport (a string: tsx's __name helper does not exist in the page). */
function rects(page: Page): Promise<Layout> {
  return page.evaluate(`(() => {
    const box = (selector) => {
      const r = document.querySelector(selector)?.getBoundingClientRect();
      return r ? { top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height } : undefined;
    };
    const cards = document.querySelector('.permission-cards').getBoundingClientRect();
    const actions = document.querySelector('.permission-card .permission-actions').getBoundingClientRect();
    // Lines in view: inside the cards' box and above the answers, which stick to its bottom.
    const visibleLines = Array.from(document.querySelectorAll('.permission-card .diff-line')).filter((line) => {
      const r = line.getBoundingClientRect();
      return r.top >= Math.max(0, cards.top) - 1 && r.bottom <= Math.min(cards.bottom, actions.top) + 1;
    }).length;
    return { said: box('.message-list > .message.assistant:last-of-type'), messages: box('.messages'), cards: box('.permission-cards'), composer: box('.composer'), input: box('.composer-input'), visibleLines, width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth };
  })()`);
}

for (const width of [390, 320]) {
  test(`at ${width} px: the prompt card leaves the reply above it in view, its diff readable, the message box usable`, async () => {
    await writeFile(join(rig.workspace.dir, `long-${width}.txt`), numbered(1, 40));
    const phone = await rig.openPhone();
    const { page } = phone;
    await page.setViewportSize({ width, height: width === 320 ? 568 : 844 });
    rig.fake.script(
      {
        text: 'I will rewrite the long file now; here is the whole change, line by line, so you can check it.',
        tool_calls: [{ name: 'write_file', arguments: { path: `long-${width}.txt`, content: numbered(1, 40).replace(/line (\d+)/g, 'row $1') } }],
      },
      { text: 'Kept as it was.', chunks: 1 },
    );
    await send(page, `rewrite long-${width}.txt`);
    const card = page.locator('.permission-card[data-tool="write_file"]');
    await card.waitFor();
    await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))');
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.screenshot({ path: join(SCREENS, `prompt-card-${width}-${scheme}.png`) });
    }
    const at = await rects(page);
    assert.ok(at.said && at.messages && at.cards && at.composer && at.input);
    assert.ok(at.scrollWidth <= at.width, `nothing wider than the viewport (${at.scrollWidth} > ${at.width})`);
    assert.ok(at.said.bottom <= Math.min(at.messages.bottom, at.cards.top) + 1, `the reply above the card ends in view (reply ends at ${at.said.bottom}, the card starts at ${at.cards.top})`);
    assert.ok(at.visibleLines >= 5, `the diff is readable: ${at.visibleLines} lines in view`);
    assert.ok(at.input.width >= 0.4 * width, `the message box is usable: ${at.input.width} px wide`);

    await card.locator('.permission-note-toggle').click();
    const sendNote = card.locator('.permission-note-send');
    await sendNote.scrollIntoViewIfNeeded();
    const covered = (await page.evaluate(`(() => {
      const button = document.querySelector('.permission-note-send');
      const r = button.getBoundingClientRect();
      const composer = document.querySelector('.composer').getBoundingClientRect();
      const hit = document.elementFromPoint(r.left + r.width / 2, r.bottom - 2);
      return { bottom: r.bottom, composerTop: composer.top, hitsItself: hit === button || button.contains(hit) };
    })()`)) as { bottom: number; composerTop: number; hitsItself: boolean };
    assert.ok(covered.bottom <= covered.composerTop + 1 && covered.hitsItself, `"Deny with this note" is not under the message box: ${JSON.stringify(covered)}`);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.screenshot({ path: join(SCREENS, `prompt-card-note-${width}.png`) });
    await card.locator('textarea.permission-note').fill('keep it');
    await sendNote.click();
    await page.locator('.message.assistant', { hasText: 'Kept as it was.' }).waitFor();
    assert.deepEqual(phone.errors, []);
    await phone.close();
  });
}

test('"Always allow" on a command flagged ⚠ asks once more, showing the rule; the time limit reads as a limit', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const command = 'rm -rf build && echo cleaned';
  rig.fake.script({ tool_calls: [{ name: 'run_command', arguments: { command, timeout_seconds: 60 } }] }, { text: 'Cleaned.', chunks: 1 });
  await send(page, 'clean up');
  const card = page.locator('.permission-card[data-tool="run_command"]');
  await card.waitFor();
  assert.match(await card.locator('.preview-timeout').innerText(), /time limit 60 s/, 'the limit, not a past event');
  await card.locator('button[data-decision="allow_always"]').click();
  const confirm = card.locator('.permission-always');
  await confirm.waitFor();
  assert.equal(await confirm.locator('.permission-always-rule').innerText(), `run_command:${command}`, 'the rule it would add, shown before it is added');
  const config = await readFile(join(rig.svc.dataDir, 'service.json'), 'utf8');
  assert.doesNotMatch(config, /rm -rf build/, 'no rule yet: one tap did not add it');
  await page.screenshot({ path: join(SCREENS, 'prompt-card-always-390-light.png') });
  await confirm.locator('.permission-always-cancel').click();
  assert.equal(await confirm.isHidden(), true);
  await card.locator('button[data-decision="allow_always"]').click();
  await confirm.locator('.permission-always-confirm').click();
  await page.locator('.message.assistant', { hasText: 'Cleaned.' }).waitFor();
  assert.match(await readFile(join(rig.svc.dataDir, 'service.json'), 'utf8'), /run_command:rm -rf build && echo cleaned/);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
