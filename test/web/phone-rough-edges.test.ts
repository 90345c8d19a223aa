/**
 * The phone page walked again (s31, walk31): the rough edges a person meets daily, measured in Debian's
 * chromium at 360 and 390 px, light and dark (test/helpers/phone-rig.ts, a real service with the fake
 * OpenAI provider over a git workspace). With one paired computer the top bar's chip is a glyph (its
 * name, an address, was cut to "127.0.0.1…" and took the title's room), a new chat's bar is two rows as its conversation's will be (s32),
 * a conversation's title keeps its first words, Export's menu opens on screen; offline the bar is two rows with "Disconnected" whole;
 * Retry, Undo this turn, a code block's Copy, "1 waiting", the drawer's search, New chat and Remove this computer, Turn on
 * notifications, a new rule's field, list and Add, the device's name and the unpaired page's fields and
 * buttons are 44 px targets; the outbox's "waiting to send" and
 * a search hit's marked words are >= 4.5:1 in both themes. Screens under
 * test-output/screens/rough-*.png. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { gitRepository } from '../helpers/git-repo';
import { contrastScript } from '../helpers/page-contrast';
import { saveScreens } from '../helpers/phone-screens';
import { sendMessage, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { titleNeeds } from '../helpers/title-needs';
import { tempDir } from '../helpers/temp';

const SHOWN = '.machine-view:not([hidden])';
const LONG_TITLE = 'Please refactor the payment reconciliation job and its retries';
/** A conversation's title shows at least this many of its first characters at 360 px (it showed 18 beside the address chip: "Please refactor th…"). */
const TITLE_CHARS = 22;
const SIZES = [
  { width: 360, height: 740 },
  { width: 390, height: 844 },
] as const;
let rig: PhoneRig;
let repo: { dir: string; cleanup: () => Promise<void> };

before(async () => {
  repo = await tempDir('ra-rough-repo-');
  await gitRepository(repo.dir, { 'app.txt': 'line 1\nline 2\nline 3\n' });
  rig = await startPhoneRig({ permission_mode: 'ask', workspace: repo.dir });
});

after(async () => {
  await rig?.close();
  await repo?.cleanup();
});

interface Bar {
  /** The distinct rows (rounded tops) of the bar's visible controls. */
  rows: number[];
  modeRow: number;
  titleRow: number;
  titleWidth: number;
  /** The width the title's first `chars` characters and an ellipsis need. */
  titleNeeds: number;
  chip: { width: number; cutName: boolean };
  connection: { shown: boolean; cut: boolean; text: string };
  compactShown: boolean;
  pastViewport: boolean;
}

async function measureBar(page: Page, chars: number): Promise<Bar> {
  const needs = await titleNeeds(page, chars);
  // No named helpers inside: the page runs this source as is (tsx's __name is not defined there).
  const layout = await page.evaluate((shown) => {
    const bar = document.querySelector<HTMLElement>(`${shown} .topbar`)!;
    const title = bar.querySelector<HTMLElement>('.title')!;
    const visible = Array.from(bar.children as HTMLCollectionOf<HTMLElement>).filter((el) => el.getClientRects().length > 0 && el.getBoundingClientRect().width > 1);
    // Each control's middle, rounded: the controls of one row share it within a few px.
    const middles = [...visible, bar.querySelector('.mode-select')!, title].map((el) => Math.round(el.getBoundingClientRect().top + el.getBoundingClientRect().height / 2));
    const rows = [...new Set(middles.slice(0, visible.length))].sort((a, b) => a - b).filter((y, i, all) => i === 0 || y - all[i - 1]! > 12);
    const name = bar.querySelector<HTMLElement>('.machine-switch-name')!;
    const text = bar.querySelector<HTMLElement>('.connection-text')!;
    const compact = bar.querySelector<HTMLElement>('.compact-button');
    return {
      rows,
      modeRow: middles[visible.length]!,
      titleRow: middles[visible.length + 1]!,
      titleWidth: title.clientWidth,
      chip: { width: bar.querySelector('.machine-switch')!.getBoundingClientRect().width, cutName: name.getBoundingClientRect().width > 1 && name.scrollWidth > name.clientWidth + 0.5 },
      connection: { shown: text.getClientRects().length > 0, cut: text.scrollWidth > text.clientWidth + 0.5, text: text.innerText },
      compactShown: Boolean(compact && compact.getClientRects().length > 0),
      pastViewport: document.documentElement.scrollWidth > window.innerWidth,
    };
  }, SHOWN);
  return { ...layout, titleNeeds: needs };
}

/** Every size and scheme: `check` measures the bar as it is shown. */
async function eachSize(page: Page, check: (where: string) => Promise<void>): Promise<void> {
  for (const size of SIZES) {
    for (const scheme of ['light', 'dark'] as const) {
      await page.setViewportSize(size);
      await page.emulateMedia({ colorScheme: scheme });
      await check(`${size.width}px ${scheme}`);
    }
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await page.emulateMedia({ colorScheme: 'light' });
}

async function targetSize(page: Page, selector: string): Promise<{ width: number; height: number }> {
  const box = await page
    .locator(selector)
    .first()
    .evaluate((el) => el.getBoundingClientRect());
  return { width: box.width, height: box.height };
}

function assertTarget(size: { width: number; height: number }, what: string): void {
  assert.ok(size.width >= 44 && size.height >= 44, `${what}: a 44 px target (${Math.round(size.width)}x${Math.round(size.height)})`);
}

test('one computer: the chip is a glyph named for the computer, a new chat is two rows as its conversation, a title keeps its first words; offline, two rows', async () => {
  const phone = await rig.openPhone();
  const { page, context } = phone;
  const host = new URL(rig.svc.wsUrl).host;
  // Its name is still the button's name for a screen reader (and whole in the Computers sheet it opens).
  assert.equal(await page.getByRole('button', { name: `Computer: ${host}` }).count(), 1, 'the chip is named for the computer');
  await saveScreens(page, 'rough-new-chat');
  await eachSize(page, async (where) => {
    const bar = await measureBar(page, 8);
    assert.ok(!bar.chip.cutName && bar.chip.width >= 44 && bar.chip.width <= 60, `${where}: the chip, no cut name (${JSON.stringify(bar.chip)})`);
    // Two rows since s32 (polish32): "Own worktree" and the mode selector in the second, where the conversation's Export and cost come (the bar no longer grows on the first send).
    assert.ok(bar.rows.length === 2 && bar.modeRow === bar.rows[1], `${where}: a new chat's bar is two rows, the mode selector in the second (rows at ${bar.rows.join(', ')})`);
    assert.ok(bar.titleWidth >= bar.titleNeeds, `${where}: "New chat" whole (${bar.titleWidth} of ${Math.round(bar.titleNeeds)} px)`);
    assert.ok(!bar.pastViewport, `${where}: nothing past the viewport`);
  });
  // The drawer open (it covers the chat, not the bar): the same bar.
  await page.locator(`${SHOWN} .drawer-toggle`).click();
  await saveScreens(page, 'rough-new-chat-drawer');
  await eachSize(page, async (where) => {
    const bar = await measureBar(page, 8);
    assert.ok(!bar.chip.cutName && bar.rows.length === 2 && bar.titleRow === bar.rows[0], `${where}, drawer open: the same two rows, no cut chip (${JSON.stringify(bar)})`);
  });
  await page.locator(`${SHOWN} .drawer-toggle`).click();

  rig.fake.script({ text: 'On it.', chunks: 1 });
  await sendMessage(page, LONG_TITLE);
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'On it.' }).waitFor();
  await page.waitForFunction((t) => document.querySelector('.machine-view:not([hidden]) .topbar .title')?.textContent === t, LONG_TITLE);
  await saveScreens(page, 'rough-conversation');
  await eachSize(page, async (where) => {
    const bar = await measureBar(page, TITLE_CHARS);
    assert.ok(bar.titleWidth >= bar.titleNeeds, `${where}: the title shows its first ${TITLE_CHARS} characters (${bar.titleWidth} of ${Math.round(bar.titleNeeds)} px)`);
    assert.ok(!bar.chip.cutName && bar.rows.length === 2, `${where}: two rows, no cut chip (${JSON.stringify(bar)})`);
  });

  // Export's menu opens on screen, from the second row's left edge, its choices 44 px targets.
  await page.locator(`${SHOWN} .export-toggle`).click();
  await page.locator(`${SHOWN} .export-menu:not([hidden])`).waitFor();
  await saveScreens(page, 'rough-export-menu');
  await eachSize(page, async (where) => {
    const choices = await page.locator(`${SHOWN} .export-menu .button`).evaluateAll((buttons) =>
      buttons.map((b) => ({
        text: (b as HTMLElement).innerText,
        left: b.getBoundingClientRect().left,
        right: b.getBoundingClientRect().right,
        width: b.getBoundingClientRect().width,
        height: b.getBoundingClientRect().height,
        innerWidth: window.innerWidth,
      })),
    );
    assert.deepEqual(
      choices.map((c) => c.text),
      ['Markdown', 'JSON'],
    );
    for (const c of choices) {
      assert.ok(c.left >= 0 && c.right <= c.innerWidth, `${where}: Export's ${c.text} on screen (${Math.round(c.left)}-${Math.round(c.right)} px)`);
      assertTarget(c, `${where}: Export's ${c.text}`);
    }
  });
  await page.locator(`${SHOWN} .export-toggle`).click();

  await context.setOffline(true);
  await page.locator(`${SHOWN} .connection[data-state="closed"]`).waitFor();
  await saveScreens(page, 'rough-offline');
  // Offline the page says "Disconnected", then "Connecting… (reconnecting)" at each retry: the bar holds two
  // rows with either (s32: the longer took a third row at 360 px, the bar jumping at every retry).
  await eachSize(page, async (where) => {
    const bar = await measureBar(page, 16);
    assert.equal(bar.rows.length, 2, `${where}: offline, the bar is two rows (rows at ${bar.rows.join(', ')}: ${JSON.stringify(bar)})`);
    assert.ok(
      bar.connection.shown && !bar.connection.cut && /^(Disconnected|Connecting… \(reconnecting\))/.test(bar.connection.text),
      `${where}: the state's words whole (${JSON.stringify(bar.connection)})`,
    );
    assert.ok(!bar.compactShown, `${where}: Compact, which needs the computer, leaves the bar offline`);
    assert.ok(bar.titleWidth >= bar.titleNeeds, `${where}: offline the title keeps its first 16 characters (${bar.titleWidth} of ${Math.round(bar.titleNeeds)} px)`);
    assert.ok(!bar.pastViewport, `${where}: nothing past the viewport`);
  });
  // The retry's state held: a socket that opens and never answers the page's auth keeps it "Connecting…
  // (reconnecting)" (a routed WebSocket the test never connects to the service).
  await page.routeWebSocket(/./, () => {});
  await context.setOffline(false);
  await page.locator(`${SHOWN} .connection[data-state="connecting"]`, { hasText: 'reconnecting' }).waitFor({ timeout: 30_000 });
  await saveScreens(page, 'rough-reconnecting');
  await eachSize(page, async (where) => {
    const bar = await measureBar(page, 16);
    assert.equal(bar.rows.length, 2, `${where}: reconnecting, the bar is two rows (rows at ${bar.rows.join(', ')}: ${JSON.stringify(bar)})`);
    assert.ok(bar.connection.shown && !bar.connection.cut && bar.connection.text.startsWith('Connecting… (reconnecting)'), `${where}: the state's words whole (${JSON.stringify(bar.connection)})`);
  });
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('the daily buttons and fields are 44 px targets at 360 px: 1 waiting, Undo this turn, Copy, Retry, the drawer, rules, notifications, the unpaired page', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await page.setViewportSize({ width: 360, height: 740 });
  rig.fake.script(
    { tool_calls: [{ name: 'write_file', arguments: { path: 'app.txt', content: 'line 1\nline 2 changed\nline 3\n' } }] },
    { text: 'Edited app.txt.\n\n```sh\ngit diff app.txt\n```', chunks: 1 },
  );
  await sendMessage(page, 'Change line 2');
  await page.locator(`${SHOWN} .permission-card`).waitFor();
  assertTarget(await targetSize(page, `${SHOWN} .waiting-count`), '"1 waiting"');
  await page.locator(`${SHOWN} .permission-card .button`, { hasText: /^Allow$/ }).click();
  await page.locator(`${SHOWN} .undo-turn`).waitFor();
  assertTarget(await targetSize(page, `${SHOWN} .undo-turn`), 'Undo this turn');
  assertTarget(await targetSize(page, `${SHOWN} .code-block .copy-button`), "a code block's Copy");

  rig.fake.script({ status: 401 });
  await sendMessage(page, 'This one fails');
  await page.locator(`${SHOWN} .turn-retry`).waitFor();
  assertTarget(await targetSize(page, `${SHOWN} .turn-retry`), 'Retry');
  await saveScreens(page, 'rough-retry');

  await page.setViewportSize({ width: 360, height: 740 });
  await page.locator(`${SHOWN} .drawer-toggle`).click();
  await page.locator(`${SHOWN} .rules-open`).click();
  for (const [selector, what] of [
    ['.search-input', 'the search field'],
    ['.new-chat', 'New chat'],
    ['.forget-pairing', 'Remove this computer'],
    ['.rules-add-input', "a new rule's field"],
    ['.rules-add-list', "a new rule's list (Allow or Deny)"],
    ['.rules-add .button', "a new rule's Add"],
  ] as const) {
    assertTarget(await targetSize(page, `${SHOWN} ${selector}`), what);
  }
  await page.locator(`${SHOWN} .open-notifications`).click();
  await page.locator('.push-dialog:not([hidden]) .push-enable').waitFor();
  assertTarget(await targetSize(page, '.push-dialog:not([hidden]) .push-enable'), 'Turn on notifications');
  assertTarget(await targetSize(page, '.push-dialog:not([hidden]) .push-device-name'), "the device's name");
  assert.deepEqual(phone.errors, []);
  await phone.close();

  const context = await rig.browser.newContext({ viewport: { width: 360, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const unpaired = await context.newPage();
  await unpaired.goto(`${rig.site.url}/phone.html`);
  await unpaired.locator('.pairing-scan').waitFor();
  assertTarget(await targetSize(unpaired, '.pairing-scan'), 'Scan or paste a pairing link');
  assertTarget(await targetSize(unpaired, '.pairing-form button[type="submit"]'), 'Connect');
  for (const [index, what] of [
    [0, 'the service address'],
    [1, 'the token'],
  ] as const) {
    const field = await unpaired
      .locator('.pairing-form input')
      .nth(index)
      .evaluate((el) => el.getBoundingClientRect());
    assertTarget(field, `the unpaired page's ${what} field`);
  }
  await context.close();
});

test('readable in both themes: the outbox\'s "waiting to send" under its faded bubble, a search hit\'s marked words', async () => {
  const phone = await rig.openPhone();
  const { page, context } = phone;
  rig.fake.script({ text: 'The reconciliation job retries three times.', chunks: 1 });
  await sendMessage(page, 'How does the reconciliation job retry?');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'retries three times' }).waitFor();

  await page.locator(`${SHOWN} .drawer-toggle`).click();
  await page.locator(`${SHOWN} .search-input`).fill('reconciliation');
  await page.locator(`${SHOWN} .search-hit mark`).first().waitFor();
  await saveScreens(page, 'rough-search');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const ratio = (await page.evaluate(contrastScript(`${SHOWN} .search-hit mark`))) as number;
    assert.ok(ratio >= 4.5, `${scheme}: a search hit's marked word at ${ratio.toFixed(2)}:1`);
  }
  await page.locator(`${SHOWN} .search-input`).fill('');
  await page.locator(`${SHOWN} .drawer-toggle`).click();

  await context.setOffline(true);
  await page.locator(`${SHOWN} .connection[data-state="closed"]`).waitFor();
  await sendMessage(page, 'Sent while offline');
  await page.locator(`${SHOWN} .pending-note`).waitFor();
  await saveScreens(page, 'rough-outbox');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const ratio = (await page.evaluate(contrastScript(`${SHOWN} .message.user.pending .pending-note`))) as number;
    assert.ok(ratio >= 4.5, `${scheme}: "waiting to send" at ${ratio.toFixed(2)}:1`);
  }
  rig.fake.script({ text: 'Answered once back.', chunks: 1 });
  await context.setOffline(false);
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'Answered once back.' }).waitFor({ timeout: 30_000 });
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
