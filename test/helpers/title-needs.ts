/**
 * How wide the top bar's title on screen would be to show its first `chars` characters and an ellipsis, in
 * its own font (the phone's top-bar tests hold the title to at least that).
 */
import type { Page } from 'playwright-core';

export function titleNeeds(page: Page, chars: number): Promise<number> {
  // No named helpers inside: the page runs this source as is (tsx's __name is not defined there).
  return page.evaluate((count) => {
    const title = document.querySelector<HTMLElement>('.machine-view:not([hidden]) .topbar .title')!;
    const probe = document.createElement('span');
    probe.style.font = getComputedStyle(title).font;
    probe.style.whiteSpace = 'pre';
    probe.textContent = `${(title.textContent ?? '').slice(0, count)}…`;
    document.body.append(probe);
    const width = probe.getBoundingClientRect().width;
    probe.remove();
    return width;
  }, chars);
}
