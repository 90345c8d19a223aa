/**
 * The attachment chip sits in the message box's area, not over the conversation (issue 23, small
 * things: "the attachment chip floats over the last message"). A phone at 320 and 390 px with a few
 * messages, at the bottom of the chat, chooses a file: its chip is measured inside the composer's area
 * (between the composer's top border and the message box), it overlaps no message, and the last message
 * stays wholly in view above it. Real parts (test/helpers/phone-rig.ts); runs after `node esbuild.mjs`.
 * Screenshots: test-output/screens/attachment-chip-<width>.png.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

const SCREENS = join('test-output', 'screens');
let rig: PhoneRig;

before(async () => {
  await mkdir(SCREENS, { recursive: true });
  rig = await startPhoneRig({ permission_mode: 'allow' });
});

after(async () => {
  await rig?.close();
});

interface Box {
  top: number;
  bottom: number;
  left: number;
  right: number;
}

for (const width of [320, 390]) {
  test(`${width} px: a chosen file's chip sits in the composer and the last message stays in view above it`, async () => {
    const phone = await rig.openPhone();
    const { page } = phone;
    await page.setViewportSize({ width, height: width === 320 ? 568 : 844 });
    for (const n of [1, 2, 3, 4, 5]) {
      const input = page.locator('.composer-input');
      await input.fill(`message number ${n} with enough words to take a couple of lines on a narrow phone screen`);
      await input.press('Enter');
      await page.locator('.message.assistant', { hasText: `echo: message number ${n}` }).waitFor();
    }
    await page.locator('.attach-input').setInputFiles({ name: 'notes-for-the-assistant.txt', mimeType: 'text/plain', buffer: Buffer.from('hello\n') });
    await page.locator('.attachment-chip').waitFor();
    // Layout settles (the chip's upload state text changes its size once).
    await page.locator('.attachment-chip[data-state="ready"]').waitFor();
    await page.screenshot({ path: join(SCREENS, `attachment-chip-${width}.png`) });
    const box = async (selector: string): Promise<Box> => {
      const b = await page.locator(selector).first().boundingBox();
      assert.ok(b, `${selector} is on screen`);
      return { top: b.y, bottom: b.y + b.height, left: b.x, right: b.x + b.width };
    };
    const scroller = await box('.messages');
    const messages = await page.locator('.messages .message').evaluateAll((nodes) => nodes.map((n) => ({ top: n.getBoundingClientRect().top, bottom: n.getBoundingClientRect().bottom })));
    const boxes = {
      chip: await box('.attachment-chip'),
      composer: await box('.composer'),
      input: await box('.composer-input'),
      scroller,
      // Messages that show on screen (inside the scroller's view).
      visible: messages.filter((b) => b.bottom > scroller.top && b.top < scroller.bottom),
      last: messages[messages.length - 1],
    };
    assert.ok(
      boxes.chip.top >= boxes.composer.top - 0.5 && boxes.chip.bottom <= boxes.input.top + 0.5,
      `the chip is inside the composer, above the message box: chip ${JSON.stringify(boxes.chip)} composer ${JSON.stringify(boxes.composer)} input ${JSON.stringify(boxes.input)}`,
    );
    for (const message of boxes.visible)
      assert.ok(
        message.bottom <= boxes.chip.top + 0.5 || message.top >= boxes.chip.bottom - 0.5 || boxes.scroller.bottom <= boxes.chip.top + 0.5,
        `no message under the chip: ${JSON.stringify(message)} chip ${JSON.stringify(boxes.chip)}`,
      );
    assert.ok(
      boxes.last.bottom <= boxes.scroller.bottom + 0.5 && boxes.last.bottom <= boxes.chip.top + 0.5,
      `the last message is in view above the chip: last ${JSON.stringify(boxes.last)} scroller ${JSON.stringify(boxes.scroller)} chip ${JSON.stringify(boxes.chip)}`,
    );
    assert.ok(boxes.chip.right <= width + 0.5, 'the chip is inside the screen');
    assert.deepEqual(phone.errors, []);
    await phone.close();
  });
}
