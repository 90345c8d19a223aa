/**
 * The phone page for everyone (issue 23, "For everyone, on every engine"), in Debian's chromium against
 * real parts (test/helpers/phone-rig.ts):
 * - the main controls are tap targets of at least 44x44 CSS px at 390 and 320 px, a prompt waiting;
 * - with two machines paired (two chats on the page) no id is given twice, and every label, aria-controls
 *   and aria-labelledby names an element of its own chat;
 * - axe-core, run inside the page, finds no serious or critical violation on the main screens (chat, a
 *   waiting prompt, the conversation list, devices, notifications, activity, a worktree conversation's
 *   Changes sheet, computers), light and dark;
 * - every one of those screens is saved at 320, 390 and 768 px, light and dark, under
 *   test-output/screens/ to be looked at.
 * Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { gitRepository } from '../helpers/git-repo';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { tempDir } from '../helpers/temp';
import { startService, type RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

const SCREENS = join('test-output', 'screens');
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const WIDTHS = [320, 390, 768] as const;
const HEIGHT: Record<number, number> = { 320: 568, 390: 844, 768: 1024 };
/** The controls a phone user taps most, each at least 44x44 CSS px (Send, or Stop in its place while a turn runs and nothing is typed). */
const TAP_TARGETS = ['.drawer-toggle', '.machine-switch', '.mode-select', '.composer .attach', '.composer .camera', '.composer :is(.send, .stop)', '.permission-card .permission-actions .button'];

let rig: PhoneRig;
/** A second machine, added from the page's "Add a computer" for the Computers screen. */
let second: RunningService;
let repoDir: { dir: string; cleanup: () => Promise<void> };

before(async () => {
  await mkdir(SCREENS, { recursive: true });
  // A git repository, so a conversation can work in its own worktree and the Changes sheet has a diff.
  repoDir = await tempDir('ra-a11y-repo-');
  await gitRepository(repoDir.dir, { 'app.txt': 'line 1\nline 2\nline 3\n' });
  rig = await startPhoneRig({ permission_mode: 'ask', workspace: repoDir.dir });
  second = await startService({ base_url: rig.fake.url, model: 'fake-model', workspace: rig.workspace.dir });
});

after(async () => {
  await second?.dispose();
  await rig?.close();
  await repoDir?.cleanup();
});

/** Sends a message that asks to write a file: its prompt waits on the page. */
async function promptWaiting(page: Page, path: string): Promise<void> {
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path, content: 'hello\n' } }] }, { text: `Wrote ${path}.`, chunks: 2 });
  const input = page.locator('.composer-input');
  await input.fill(`please write ${path}`);
  await input.press('Enter');
  await page.locator('.permission-card').waitFor();
}

async function chatOnce(page: Page, text: string): Promise<void> {
  const input = page.locator('.composer-input');
  await input.fill(text);
  await input.press('Enter');
  await page.locator('.message.assistant', { hasText: `echo: ${text}` }).waitFor();
}

interface Target {
  selector: string;
  width: number;
  height: number;
}

function measureTargets(page: Page): Promise<Target[]> {
  return page.evaluate((selectors) => {
    const shown = document.querySelector('.machine-view:not([hidden])') ?? document;
    return selectors.flatMap((selector) =>
      Array.from(shown.querySelectorAll<HTMLElement>(selector))
        .filter((el) => el.getClientRects().length > 0)
        .map((el) => ({
          selector: `${selector} "${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 30)}"`,
          width: el.getBoundingClientRect().width,
          height: el.getBoundingClientRect().height,
        })),
    );
  }, TAP_TARGETS);
}

test('the main controls are tap targets of at least 44x44 CSS px at 390 and 320 px', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await promptWaiting(page, 'tap.txt');
  try {
    for (const width of [390, 320]) {
      await page.setViewportSize({ width, height: HEIGHT[width] });
      const targets = await measureTargets(page);
      for (const selector of TAP_TARGETS)
        assert.ok(
          targets.some((t) => t.selector.startsWith(`${selector} `)),
          `${width}px: ${selector} is on screen`,
        );
      const small = targets.filter((t) => t.width < 44 - 0.01 || t.height < 44 - 0.01).map((t) => `${t.selector} ${t.width.toFixed(1)}x${t.height.toFixed(1)}`);
      assert.deepEqual(small, [], `${width}px: every main control at least 44x44`);
    }
  } finally {
    // The turn ends either way, so the next test's script starts clean.
    await page.locator('.permission-card button[data-decision="deny"]').click();
    await page.locator('.message.assistant', { hasText: 'Wrote tap.txt.' }).waitFor();
  }
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('with two machines open no id is given twice, and labels and aria references stay in their own chat', async () => {
  const phone = await rig.openPhone();
  try {
    const { page } = phone;
    // The second machine's pairing link opened into the open page (only the fragment changes), and agreed to.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.evaluate((fragment) => (location.hash = fragment), `url=${encodeURIComponent(second.wsUrl)}&token=${encodeURIComponent(second.token)}`);
    await page.locator('.machine-view').nth(1).waitFor({ state: 'attached' });
    await page.locator('.machine-view:not([hidden]) .connection[data-state="open"]').waitFor();
    const found = await page.evaluate(() => {
      const counts = new Map<string, number>();
      for (const el of Array.from(document.querySelectorAll('[id]'))) counts.set(el.id, (counts.get(el.id) ?? 0) + 1);
      const references = Array.from(document.querySelectorAll('label[for], [aria-controls], [aria-labelledby]')).flatMap((el) => {
        const named = (el.getAttribute('for') ?? el.getAttribute('aria-controls') ?? el.getAttribute('aria-labelledby') ?? '').split(/\s+/);
        // Each reference resolves, and within the machine view it belongs to when it has one.
        return named.filter((id) => {
          const target = document.getElementById(id);
          const view = el.closest('.machine-view');
          return !target || (view !== null && target.closest('.machine-view') !== null && !view.contains(target));
        });
      });
      return { views: document.querySelectorAll('.machine-view').length, duplicates: [...counts].filter(([, n]) => n > 1).map(([id, n]) => `#${id} x${n}`), broken: references };
    });
    assert.equal(found.views, 2, 'two machines on the page');
    assert.deepEqual(found.duplicates, [], 'no id twice');
    assert.deepEqual(found.broken, [], 'every reference names an element of its own chat');
    assert.deepEqual(phone.errors, []);
  } finally {
    await phone.close();
  }
});

/** A fresh pairing link of the service, as `remote-assistant pair` prints it. */
async function pairingLink(svc: RunningService): Promise<string> {
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  const link = ((await owner.request({ type: 'create_lan_pairing' })).data as { link: string }).link;
  owner.close();
  return link;
}

interface Violation {
  id: string;
  impact: string;
  help: string;
  nodes: string[];
}

/** axe-core inside the page (the page's CSP allows no inline script: evaluated through the driver). */
async function axe(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const run = (
      window as unknown as {
        axe: { run(context: Document, options: object): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[]; failureSummary: string }[] }[] }> };
      }
    ).axe.run;
    const result = await run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 6).map((n) => `${n.target.join(' ')}: ${n.failureSummary.replace(/\s+/g, ' ').slice(0, 200)}`) }));
  });
}

interface Screen {
  name: string;
  open(page: Page): Promise<void>;
  close(page: Page): Promise<void>;
}

/** Opens the drawer where it is one (narrow); at 768 px the list is always beside the chat. */
async function openDrawer(page: Page): Promise<void> {
  if (await page.locator('.drawer-toggle').isVisible()) {
    if ((await page.locator('.drawer-toggle').getAttribute('aria-expanded')) !== 'true') await page.locator('.drawer-toggle').click();
  }
}

async function closeDrawer(page: Page): Promise<void> {
  if ((await page.locator('.drawer-toggle').getAttribute('aria-expanded')) === 'true') await page.keyboard.press('Escape');
}

const SCREENS_TO_SEE: Screen[] = [
  { name: 'chat', open: async () => undefined, close: async () => undefined },
  {
    name: 'conversations',
    open: openDrawer,
    close: closeDrawer,
  },
  {
    // A conversation's delete asked: the question, a filled Delete and Cancel (contrast in both schemes).
    name: 'delete-confirm',
    open: async (page) => {
      await openDrawer(page);
      await page.locator('.conversation .conversation-delete').first().click();
      await page.locator('.conversation .confirm-delete').waitFor();
    },
    close: async (page) => {
      await page.locator('.conversation .cancel-delete').click();
      await closeDrawer(page);
    },
  },
  {
    name: 'devices',
    open: async (page) => {
      await openDrawer(page);
      const devices = page.locator('.machine-view:not([hidden]) .devices');
      if (!(await devices.evaluate((d) => (d as HTMLDetailsElement).open))) await devices.locator('summary').click();
      await devices.locator('.device').first().waitFor();
      await devices.scrollIntoViewIfNeeded();
    },
    close: closeDrawer,
  },
  {
    name: 'notifications',
    open: async (page) => {
      await openDrawer(page);
      await page.locator('.machine-view:not([hidden]) .open-notifications').click();
      await page.locator('.push-dialog:not([hidden])').waitFor();
    },
    close: async (page) => {
      await page.locator('.push-dialog:not([hidden]) .push-close').click();
      await closeDrawer(page);
    },
  },
  {
    name: 'activity',
    open: async (page) => {
      await openDrawer(page);
      await page.locator('.machine-view:not([hidden]) .activity-open').click();
      await page.locator('.activity-panel:not([hidden]) .activity-entry').first().waitFor();
    },
    close: async (page) => {
      await page.locator('.activity-panel:not([hidden]) .activity-close').click();
      await closeDrawer(page);
    },
  },
  {
    name: 'changes',
    open: async (page) => {
      // A new chat in its own worktree whose assistant edits app.txt there: its Changes sheet.
      await openDrawer(page);
      await page.locator('.machine-view:not([hidden]) .new-chat').click();
      await closeDrawer(page);
      await page.locator('.worktree-toggle input').check();
      rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'app.txt', content: 'line 1\nline 2 by the assistant\nline 3\n' } }] }, { text: 'Edited app.txt.', chunks: 1 });
      await page.locator('.composer-input').fill('Improve app.txt');
      await page.locator('.composer-input').press('Enter');
      await page.locator('.permission-card button[data-decision="allow"]').click();
      await page.locator('.message.assistant', { hasText: 'Edited app.txt.' }).waitFor();
      await page.locator('.changes-badge:has-text("1 changed")').click();
      await page.locator('.changes-panel:not([hidden]) .change-file').waitFor();
    },
    close: async (page) => {
      await page.locator('.changes-panel:not([hidden]) .changes-close').click();
    },
  },
  {
    name: 'add-computer',
    open: async (page) => {
      // The sheet as it answers a link whose secret the machine never gave.
      await page.locator('.machine-view:not([hidden]) .machine-switch').click();
      await page.locator('.add-machine-toggle').click();
      await page.locator('#ra-add-link').fill((await pairingLink(second)).replace(/pair=[^&]+/, 'pair=never-given'));
      await page.locator('.add-machine-submit').click();
      await page.locator('.add-machine-status[data-kind="error"]').waitFor();
    },
    close: async (page) => {
      await page.keyboard.press('Escape');
      await page.locator('.machines-panel').waitFor({ state: 'hidden' });
    },
  },
  {
    name: 'computers',
    open: async (page) => {
      // Two machines: the second added from this page, then the list.
      if ((await page.locator('.machine-view').count()) < 2) {
        await page.locator('.machine-view:not([hidden]) .machine-switch').click();
        await page.locator('.add-machine-toggle').click();
        await page.locator('#ra-add-link').fill(await pairingLink(second));
        await page.locator('.add-machine-submit').click();
        await page.locator('.machine-view:not([hidden]) .connection[data-state="open"]').waitFor();
        await page.locator('.machines-panel').waitFor({ state: 'hidden' });
      }
      await page.locator('.machine-view:not([hidden]) .machine-switch').click();
      await page.locator('.machines-panel:not([hidden])').waitFor();
      await page.locator('.machines-panel .machine').nth(1).locator('.machine-state', { hasText: 'online' }).waitFor();
    },
    close: async (page) => {
      await page.keyboard.press('Escape');
      await page.locator('.machines-panel').waitFor({ state: 'hidden' });
    },
  },
];

async function look(page: Page, screen: string, scheme: string, found: Record<string, Violation[]>): Promise<void> {
  await page.setViewportSize({ width: 390, height: HEIGHT[390] });
  const violations = await axe(page);
  if (violations.length > 0) found[`${screen} (${scheme})`] = violations;
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: HEIGHT[width] });
    await page.screenshot({ path: join(SCREENS, `${screen}-${width}-${scheme}.png`) });
  }
  await page.setViewportSize({ width: 390, height: HEIGHT[390] });
}

for (const scheme of ['light', 'dark'] as const) {
  test(`axe-core finds no serious or critical violation on the main screens (${scheme}); screenshots at 320, 390 and 768 px`, async () => {
    // Paired as a device (a one-time secret), as a real phone is: Devices then lists it.
    const owner = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
    const secret = ((await owner.request({ type: 'create_lan_pairing' })).data as { pairing_secret: string }).pairing_secret;
    owner.close();
    const phone = await rig.openPhone(undefined, `pair=${encodeURIComponent(secret)}`);
    const { page } = phone;
    await page.emulateMedia({ colorScheme: scheme });
    const found: Record<string, Violation[]> = {};
    await chatOnce(page, `a ${scheme} conversation`);
    await promptWaiting(page, `${scheme}.txt`);
    await look(page, 'prompt', scheme, found);
    await page.locator('.permission-card button[data-decision="allow"]').click();
    await page.locator('.message.assistant', { hasText: `Wrote ${scheme}.txt.` }).waitFor();
    for (const screen of SCREENS_TO_SEE) {
      await screen.open(page);
      await look(page, screen.name, scheme, found);
      await screen.close(page);
    }
    await writeFile(join(SCREENS, `axe-${scheme}.json`), JSON.stringify(found, null, 2));
    assert.deepEqual(found, {}, `no serious or critical axe-core violation (all of them: ${SCREENS}/axe-${scheme}.json)`);
    assert.deepEqual(phone.errors, []);
    await phone.close();
  });
}
