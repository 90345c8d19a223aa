/**
 * The drawer's settings on a phone (s25, from walk24's finding "settings buried at the drawer's bottom in
 * three styles"): Permission rules, Activity, Devices and Notifications are rows alike (one size, one
 * weight, each a 44 px target, their text starting where the search box's does, a marker at the right),
 * and this computer's address sits just above "Remove this computer". Real Chromium at 320 and 390 px
 * (test/helpers/phone-rig.ts); screens under test-output/screens/drawer-settings-*. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { saveScreens } from '../helpers/phone-screens';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'ask' });
});

after(async () => {
  await rig?.close();
});

const ROWS = ['.rules-open', '.activity-open', '.devices-open', '.open-notifications'];

/** Each row's look: its text's left edge, its height, font, and whether a marker is drawn after the text. */
const LOOK = `((selectors) => selectors.map((selector) => {
  const row = document.querySelector('.machine-view:not([hidden]) ' + selector);
  const style = getComputedStyle(row);
  const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
  const text = walker.nextNode();
  const range = document.createRange();
  range.selectNodeContents(text);
  const box = row.getBoundingClientRect();
  const textBox = range.getBoundingClientRect();
  const hint = row.querySelector('.drawer-row-hint');
  const after = getComputedStyle(row, '::after').content;
  return {
    selector,
    text: text.textContent,
    textLeft: Math.round(textBox.left),
    height: box.height,
    fontSize: style.fontSize,
    fontWeight: style.fontWeight,
    color: style.color,
    marker: Boolean(hint) || (after !== 'none' && after !== 'normal' && after !== ''),
    markerRight: hint ? box.right - hint.getBoundingClientRect().right : undefined,
  };
}))`;

test('the drawer’s settings are rows alike, and the address sits above its removal', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  for (const width of [320, 390]) {
    await page.setViewportSize({ width, height: 780 });
    await page.locator('.drawer-toggle').click();
    await page.locator('.machine-view:not([hidden]) .drawer').waitFor();
    const rows = (await page.evaluate(`${LOOK}(${JSON.stringify(ROWS)})`)) as {
      selector: string;
      text: string;
      textLeft: number;
      height: number;
      fontSize: string;
      fontWeight: string;
      color: string;
      marker: boolean;
    }[];
    const searchLeft = await page
      .locator('.machine-view:not([hidden]) .drawer input')
      .first()
      .evaluate((el) => Math.round(el.getBoundingClientRect().left));
    assert.deepEqual(
      rows.map((r) => r.text),
      ['Permission rules', 'Activity', 'Devices', 'Notifications'],
    );
    for (const row of rows) {
      assert.ok(row.height >= 44, `${width} px: ${row.text} is a 44 px target (${row.height})`);
      assert.equal(row.fontSize, rows[0].fontSize, `${width} px: ${row.text}'s size`);
      assert.equal(row.fontWeight, rows[0].fontWeight, `${width} px: ${row.text}'s weight`);
      assert.equal(row.color, rows[0].color, `${width} px: ${row.text}'s colour`);
      assert.equal(row.textLeft, rows[0].textLeft, `${width} px: ${row.text}'s text starts where the others' do`);
      assert.ok(row.marker, `${width} px: ${row.text} has a marker at its right`);
    }
    assert.ok(rows[0].textLeft > searchLeft, `${width} px: the rows' text is inside the drawer's edge (${rows[0].textLeft} vs ${searchLeft})`);
    // The computer's address, then its removal, at the end.
    const order = await page.evaluate(() => {
      const footer = document.querySelector('.machine-view:not([hidden]) .drawer-footer')!;
      return Array.from(footer.children, (el) => el.className);
    });
    assert.match(order[order.length - 2], /paired-with/, JSON.stringify(order));
    assert.match(order[order.length - 1], /forget-pairing/, JSON.stringify(order));
    await page.keyboard.press('Escape');
  }
  await page.locator('.drawer-toggle').click();
  await page.locator('.devices-open').click();
  await saveScreens(page, 'drawer-settings', (p) => p.locator('.machine-view:not([hidden]) .forget-pairing').evaluate((el) => el.scrollIntoView({ block: 'end' })));
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
