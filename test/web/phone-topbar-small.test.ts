/**
 * The phone's top bar on a small phone (s23): at 320 and 340 px, light and dark, connected and offline,
 * with a long conversation title and a long machine name, the title shows at least its first 16
 * characters, the drawer toggle, the machine chip and the mode selector are on screen and named, the
 * connection state says what it is in words when it is not "Connected", and nothing is wider than the
 * viewport. Screenshots at 320, 360 and 390 px go to test-output/screens/topbar-*.png to be looked at.
 * Real parts: test/helpers/phone-rig.ts (a real service, Debian's chromium). Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { titleNeeds } from '../helpers/title-needs';

const SCREENSHOTS = join('test-output', 'screens');
const LONG_TITLE = 'Refactor the payment reconciliation job and its retries';
const LONG_MACHINE = 'Work laptop in the office upstairs';
/** The title shows at least this many of its first characters. */
const TITLE_CHARS = 16;
let rig: PhoneRig;

before(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  rig = await startPhoneRig({ permission_mode: 'allow' });
});

after(async () => {
  await rig?.close();
});

interface BarLayout {
  scrollWidth: number;
  innerWidth: number;
  overflowing: string[];
  titleWidth: number;
  titleNeeds: number;
  drawer: { inside: boolean; name: string | null };
  machine: { inside: boolean; width: number; name: string };
  mode: { inside: boolean; label: string | null };
  connectionWords: boolean;
  state: string;
  compact: { shown: boolean; width: number; height: number };
  usage: string;
}

async function measure(page: Page): Promise<BarLayout> {
  const needs = await titleNeeds(page, TITLE_CHARS);
  // No named helpers inside: the page runs this source as is (tsx's __name is not defined there).
  const layout = await page.evaluate(() => {
    const bar = document.querySelector<HTMLElement>('.machine-view:not([hidden]) .topbar')!;
    const viewport = document.documentElement.clientWidth;
    const title = bar.querySelector<HTMLElement>('.title')!;
    const machine = bar.querySelector<HTMLElement>('.machine-switch')!;
    const mode = bar.querySelector<HTMLSelectElement>('.mode-select')!;
    const text = bar.querySelector<HTMLElement>('.connection-text')!;
    const [drawerInside, machineInside, modeInside, textInside] = [bar.querySelector('.drawer-toggle')!, machine, mode, text].map(
      (el) => el.getClientRects().length > 0 && el.getBoundingClientRect().width > 0 && el.getBoundingClientRect().left >= -0.5 && el.getBoundingClientRect().right <= viewport + 0.5,
    );
    return {
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      overflowing: Array.from(bar.querySelectorAll<HTMLElement>('*'))
        .filter((el) => el.getClientRects().length > 0 && el.getBoundingClientRect().right > viewport + 0.5)
        .map((el) => `${el.tagName.toLowerCase()}.${el.className}`),
      titleWidth: title.clientWidth,
      drawer: { inside: drawerInside, name: bar.querySelector('.drawer-toggle')!.getAttribute('aria-label') },
      machine: { inside: machineInside, width: machine.getBoundingClientRect().width, name: machine.textContent ?? '' },
      mode: { inside: modeInside, label: mode.getAttribute('aria-label') },
      connectionWords: textInside && text.scrollWidth <= text.clientWidth + 0.5,
      state: bar.querySelector<HTMLElement>('.connection')!.dataset.state ?? '',
      compact: ((b) => ({ shown: b.getClientRects().length > 0, width: b.getBoundingClientRect().width, height: b.getBoundingClientRect().height }))(
        bar.querySelector<HTMLElement>('.compact-button')!,
      ),
      usage: bar.querySelector<HTMLElement>('.usage-total')?.innerText ?? '',
    };
  });
  return { ...layout, titleNeeds: needs };
}

function assertReadable(layout: BarLayout, where: string): void {
  assert.ok(layout.scrollWidth <= layout.innerWidth, `${where}: page ${layout.scrollWidth}px wide in a ${layout.innerWidth}px viewport`);
  assert.deepEqual(layout.overflowing, [], `${where}: nothing in the bar past the viewport`);
  assert.ok(layout.titleWidth >= layout.titleNeeds, `${where}: the title ${layout.titleWidth}px wide, its first ${TITLE_CHARS} characters need ${Math.round(layout.titleNeeds)}px`);
  assert.ok(layout.drawer.inside && layout.drawer.name === 'Conversations', `${where}: the drawer toggle on screen and named`);
  assert.ok(layout.machine.inside && layout.machine.width >= 44, `${where}: the machine chip on screen (${layout.machine.width}px)`);
  assert.ok(layout.machine.name.includes(LONG_MACHINE), `${where}: the chip's name is the machine's whole name`);
  assert.ok(layout.mode.inside && layout.mode.label === 'Tool permission mode', `${where}: the mode selector on screen and labelled`);
  if (layout.state !== 'open') assert.ok(layout.connectionWords, `${where}: the connection state (${layout.state}) in words, whole`);
  if (layout.compact.shown) assert.ok(layout.compact.width >= 44 && layout.compact.height >= 44, `${where}: Compact a 44 px target (${layout.compact.width}x${layout.compact.height})`);
  // The fake provider's model has no price: the bar says how many tokens, not a bare "—".
  assert.match(layout.usage, /^\d[\d.]*k? tokens$/, `${where}: the conversation's usage in the bar`);
}

async function shoot(page: Page, name: string, check: boolean): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [320, 340, 360, 390]) {
      await page.setViewportSize({ width, height: 568 });
      if (width !== 340) await page.screenshot({ path: join(SCREENSHOTS, `topbar-${name}-${width}-${scheme}.png`) });
      if (check && width < 360) assertReadable(await measure(page), `${name} ${width}px ${scheme}`);
    }
  }
}

test('the top bar reads at 320-359 px with a long title and a long machine name, connected and offline', async () => {
  const phone = await rig.openPhone();
  const { page, context } = phone;
  await shoot(page, 'new-online', false);
  await context.setOffline(true);
  await page.locator('.connection:not([data-state="open"])').waitFor();
  await shoot(page, 'new-offline', false);
  await context.setOffline(false);
  await page.locator('.machine-view:not([hidden]) .connection[data-state="open"]').waitFor({ timeout: 30_000 });

  // A long machine name, set as a user does: the switcher's rename (a prompt).
  page.once('dialog', (dialog) => void dialog.accept(LONG_MACHINE));
  await page.locator('.machine-switch').click();
  await page.locator('.machine-rename').first().click();
  await page.locator('.machine-switch-name', { hasText: LONG_MACHINE }).waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, 'topbar-computers-sheet.png') });
  await page.locator('.machines-close').click();

  rig.fake.script({ text: 'On it.', chunks: 1 });
  const input = page.locator('.composer-input');
  await input.fill(LONG_TITLE);
  await input.press('Enter');
  await page.locator('.message.assistant', { hasText: 'On it.' }).waitFor();
  await page.waitForFunction((t) => document.querySelector('.machine-view:not([hidden]) .topbar .title')?.textContent === t, LONG_TITLE);
  await shoot(page, 'long-online', true);
  await context.setOffline(true);
  await page.locator('.connection:not([data-state="open"])').waitFor();
  await shoot(page, 'long-offline', true);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('at 320 px a long connection hint wraps on its own row and stays whole, the countdown beside it', async () => {
  const context = await rig.browser.newContext({ viewport: { width: 320, height: 568 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  await page.goto(`${rig.site.url}/phone.html#url=${encodeURIComponent(rig.svc.wsUrl)}&token=not-the-token`);
  const text = page.locator('.machine-view:not([hidden]) .connection-text', { hasText: 'refused' });
  await text.waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, 'topbar-refused-320-light.png') });
  assert.match(await text.innerText(), /^Disconnected \(the pairing token was refused; pair again; retrying in \d+ s\)$/);
  const fit = await page.evaluate(() => {
    const el = document.querySelector<HTMLElement>('.machine-view:not([hidden]) .connection-text')!;
    const r = el.getBoundingClientRect();
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, left: r.left, right: r.right, cut: el.scrollWidth > el.clientWidth + 0.5 };
  });
  assert.ok(fit.scrollWidth <= fit.innerWidth && fit.left >= 0 && fit.right <= fit.innerWidth + 0.5 && !fit.cut, `the hint fits: ${JSON.stringify(fit)}`);
  await context.close();
});
