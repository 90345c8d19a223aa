/**
 * The header fits (issue 23, "The header does not fit"): at 320 and 390 px, light and dark, with a prompt
 * waiting ("1 waiting"), no element of the page reaches past the viewport, the conversation's cost reads
 * whole at 12 px or more, the context meter keeps its width, and the mode selector is on screen; the
 * editor's chat view at a sidebar's 300 px too. Measured with getBoundingClientRect; screenshots go to
 * test-output/ to be looked at. Real parts: test/helpers/phone-rig.ts.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

const SCREENSHOTS = join('test-output', 'phone-header');
let rig: PhoneRig;

before(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  rig = await startPhoneRig({ permission_mode: 'ask', prices: { 'openai/fake-model': { input: 2, output: 8, context_window: 8000 } } });
});

after(async () => {
  await rig?.close();
});

interface HeaderLayout {
  viewport: number;
  /** Elements (outside the closed drawer) whose right edge is past the viewport. */
  overflowing: string[];
  costFont: number;
  costCut: boolean;
  costWidth: number;
  meterWidth: number;
  modeInside: boolean;
  waitingShown: boolean;
}

function measure(page: Page): Promise<HeaderLayout> {
  // No named helpers inside: the page runs this source as is (tsx's __name is not defined there).
  return page.evaluate(() => {
    const viewport = document.documentElement.clientWidth;
    const overflowing = Array.from(document.querySelectorAll<HTMLElement>('.app *'))
      .filter((el) => !el.closest('.drawer') && el.getClientRects().length > 0 && el.getBoundingClientRect().right > viewport + 0.5)
      .map((el) => `${el.tagName.toLowerCase()}.${el.className} right=${Math.round(el.getBoundingClientRect().right)}`);
    const cost = document.querySelector<HTMLElement>('.topbar .usage-total')!;
    const meter = document.querySelector<HTMLElement>('.topbar .context-meter')!;
    const mode = document.querySelector<HTMLElement>('.topbar .mode-select')!.getBoundingClientRect();
    const waiting = document.querySelector<HTMLElement>('.topbar .waiting-count')!;
    return {
      viewport,
      overflowing,
      costFont: parseFloat(getComputedStyle(cost).fontSize),
      costCut: cost.scrollWidth > cost.clientWidth + 0.5,
      costWidth: cost.getBoundingClientRect().width,
      meterWidth: meter.getBoundingClientRect().width,
      modeInside: mode.width > 0 && mode.left >= 0 && mode.right <= viewport + 0.5,
      waitingShown: waiting.getClientRects().length > 0,
    };
  });
}

function assertFits(layout: HeaderLayout, where: string): void {
  assert.ok(layout.waitingShown, `${where}: "1 waiting" shows`);
  assert.deepEqual(layout.overflowing, [], `${where}: nothing wider than the ${layout.viewport}px viewport`);
  assert.ok(layout.costFont >= 12, `${where}: the cost at ${layout.costFont}px`);
  assert.ok(!layout.costCut && layout.costWidth > 40, `${where}: the cost reads whole (${layout.costWidth}px, cut: ${layout.costCut})`);
  assert.ok(layout.meterWidth >= 30, `${where}: the context meter ${layout.meterWidth}px wide`);
  assert.ok(layout.modeInside, `${where}: the mode selector is on screen`);
}

async function promptWaiting(page: Page, title: string): Promise<void> {
  const input = page.locator('.composer-input');
  await input.fill(title);
  await input.press('Enter');
  await page.locator('.message.assistant', { hasText: `echo: ${title}` }).waitFor();
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'header.txt', content: 'x\n' } }] }, { text: 'Fine.', chunks: 1 });
  await input.fill('write header.txt');
  await input.press('Enter');
  await page.locator('.permission-card').waitFor();
  // Attached, not "visible": a header squeezed to nothing is what this test is for.
  await page.waitForFunction(() => /\$/.test(document.querySelector('.topbar .usage-total')?.textContent ?? ''));
  await page.locator('.topbar .waiting-count:not([hidden])').waitFor({ state: 'attached' });
}

async function denyAndSettle(page: Page): Promise<void> {
  await page.locator('.permission-card button[data-decision="deny"]').click();
  await page.locator('.message.assistant', { hasText: 'Fine.' }).waitFor();
}

for (const scheme of ['light', 'dark'] as const) {
  test(`the phone's header fits at 320 and 390 px with a prompt waiting (${scheme})`, async () => {
    const phone = await rig.openPhone();
    const { page } = phone;
    await page.emulateMedia({ colorScheme: scheme });
    await promptWaiting(page, `hello from a ${scheme} phone with a long title that must give way`);
    try {
      for (const width of [390, 320]) {
        await page.setViewportSize({ width, height: width === 320 ? 568 : 844 });
        const layout = await measure(page);
        await page.screenshot({ path: join(SCREENSHOTS, `phone-${width}-${scheme}.png`) });
        assertFits(layout, `${width}px ${scheme}`);
      }
    } finally {
      await denyAndSettle(page);
    }
    assert.deepEqual(phone.errors, []);
    await phone.close();
  });
}

test("the editor's chat view fits a 300 px sidebar with a prompt waiting", async () => {
  const view = await rig.openEditorView({ width: 300, height: 700 });
  const { page } = view;
  await promptWaiting(page, 'hello from the editor with a long title that must give way');
  try {
    const layout = await measure(page);
    await page.screenshot({ path: join(SCREENSHOTS, 'editor-300.png') });
    assertFits(layout, 'editor 300px');
  } finally {
    await denyAndSettle(page);
  }
  await view.close();
});

test('the mode selector wears the warning colours while Allow is set, and leaves them with Ask', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const select = page.locator('.machine-view:not([hidden]) .topbar .mode-select');
  await page.locator('.machine-view:not([hidden]) .connection[data-state="open"]').waitFor();
  await page.waitForFunction(() => !document.querySelector<HTMLSelectElement>('.machine-view:not([hidden]) .topbar .mode-select')?.disabled);
  const look = () => select.evaluate((el) => `${getComputedStyle(el).backgroundColor} ${getComputedStyle(el).borderTopColor}`);
  const asking = await look();
  await select.selectOption('allow');
  await page.waitForFunction(() => document.querySelector<HTMLElement>('.machine-view:not([hidden]) .topbar .mode-select')?.dataset.mode === 'allow');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 360, height: 740 });
    await page.screenshot({ path: join(SCREENSHOTS, `mode-allow-360-${scheme}.png`) });
  }
  await page.emulateMedia({ colorScheme: 'light' });
  assert.notEqual(await look(), asking, 'Allow looks unlike Ask');
  await select.selectOption('ask');
  await page.waitForFunction(() => document.querySelector<HTMLElement>('.machine-view:not([hidden]) .topbar .mode-select')?.dataset.mode === 'ask');
  assert.equal(await look(), asking, 'back to Ask, back to its look');
  await phone.close();
});
