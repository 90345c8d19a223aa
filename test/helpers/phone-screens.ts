/**
 * A phone screen saved at 360 and 390 px, light and dark, under test-output/screens/<name>-<width>-<scheme>.png,
 * to be looked at. `prepare` runs after each resize (scroll what is to be seen into view); the page is
 * left at the rig's 390x844, light.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

const SCREENS = join('test-output', 'screens');

export async function saveScreens(page: Page, name: string, prepare: (page: Page) => Promise<void> = async () => undefined): Promise<void> {
  await mkdir(SCREENS, { recursive: true });
  for (const width of [360, 390]) {
    for (const scheme of ['light', 'dark'] as const) {
      await page.setViewportSize({ width, height: 780 });
      await page.emulateMedia({ colorScheme: scheme });
      await prepare(page);
      await page.screenshot({ path: join(SCREENS, `${name}-${width}-${scheme}.png`) });
    }
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await page.emulateMedia({ colorScheme: 'light' });
}
