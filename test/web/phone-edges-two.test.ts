/**
 * The phone page's edges, round two (s32, polish32): what walk31 left (docs/design.md, "The phone page
 * walked again"), measured in Debian's chromium against real parts (test/helpers/phone-rig.ts: the service
 * with the fake OpenAI provider over a git workspace). A tool card's row is a 44 px target; with one
 * computer a waiting prompt is counted once in the top bar; Activity says a permission answer in the
 * card's words; at 320 px a new chat's mode selector shares the title's row; a new chat's bar is as tall
 * as the conversation it becomes; the Changes sheet's hunk heads are whole; a message waiting offline for
 * a conversation deleted elsewhere comes back to the message box, not sent anywhere. Screens under
 * test-output/screens/edges2-*.png. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { gitRepository } from '../helpers/git-repo';
import { saveScreens } from '../helpers/phone-screens';
import { machineItem, sendMessage, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const SHOWN = '.machine-view:not([hidden])';
const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join('');
const BEFORE = lines(30);
const CHANGED = BEFORE.replace('line 3\n', 'line 3 by the assistant\n').replace('line 25\n', 'line 25 by the assistant\n');
let rig: PhoneRig;
let repo: { dir: string; cleanup: () => Promise<void> };

before(async () => {
  repo = await tempDir('ra-edges2-repo-');
  await gitRepository(repo.dir, { 'app.txt': BEFORE });
  rig = await startPhoneRig({ permission_mode: 'ask', workspace: repo.dir });
});

after(async () => {
  await rig?.close();
  await repo?.cleanup();
});

/** The top bar's height and the distinct rows (middles) of its visible controls. */
function barRows(page: Page): Promise<{ height: number; rows: number[]; modeRow: number; titleRow: number }> {
  return page.evaluate((shown) => {
    const bar = document.querySelector<HTMLElement>(`${shown} .topbar`)!;
    // No named helpers inside: the page runs this source as is (tsx's __name is not defined there).
    const visible = Array.from(bar.children).filter((el) => el.getClientRects().length > 0 && el.getBoundingClientRect().width > 1);
    const middles = [...visible, bar.querySelector('.mode-select')!, bar.querySelector('.title')!].map((el) => Math.round(el.getBoundingClientRect().top + el.getBoundingClientRect().height / 2));
    const rows = [...new Set(middles.slice(0, visible.length))].sort((a, b) => a - b).filter((y, i, all) => i === 0 || y - all[i - 1]! > 12);
    return { height: Math.round(bar.getBoundingClientRect().height), rows, modeRow: middles[visible.length]!, titleRow: middles[visible.length + 1]! };
  }, SHOWN);
}

test("a tool card is a 44 px target; one computer counts a waiting prompt once; Activity says the answer in the card's words", async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script({ tool_calls: [{ name: 'run_command', arguments: { command: 'git status --short' } }] }, { text: 'Nothing changed.', chunks: 1 });
  await sendMessage(page, 'Is the tree clean?');
  await page.locator(`${SHOWN} .permission-card`).waitFor();
  await page.locator(`${SHOWN} .machine-switch-badge`, { hasText: '1' }).waitFor({ state: 'attached' });
  await saveScreens(page, 'edges2-waiting');
  for (const width of [360, 390]) {
    await page.setViewportSize({ width, height: 780 });
    // What a person sees counting the prompt: the chip's badge and "1 waiting", each if drawn.
    const counts = await page.evaluate((shown) => {
      return [`${shown} .machine-switch-badge`, `${shown} .waiting-count`]
        .map((s) => document.querySelector<HTMLElement>(s)!)
        .filter((el) => el.getClientRects().length > 0 && el.getBoundingClientRect().width > 1)
        .map((el) => el.innerText);
    }, SHOWN);
    assert.deepEqual(counts, ['1 waiting'], `${width}px: one computer, the prompt counted once in the bar (${JSON.stringify(counts)})`);
  }
  await page.locator(`${SHOWN} .permission-card .button`, { hasText: /^Allow$/ }).click();
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'Nothing changed.' }).waitFor();
  // Still said to a screen reader? The chip's name counts nothing now: the badge is back at 0 anyway.
  const card = page.locator(`${SHOWN} .tool-card`).first();
  await card.waitFor();
  await saveScreens(page, 'edges2-tool-card');
  for (const width of [360, 390]) {
    await page.setViewportSize({ width, height: 780 });
    const row = await card.locator(':scope > summary').evaluate((el) => el.getBoundingClientRect().toJSON() as DOMRect);
    assert.ok(row.height >= 44, `${width}px: a tool card's row is a 44 px target (${Math.round(row.width)}x${Math.round(row.height)})`);
  }

  // Activity: the answer as the card says the call, the recorded line kept in its details.
  await page.setViewportSize({ width: 360, height: 780 });
  await page.locator(`${SHOWN} .drawer-toggle`).click();
  await page.locator(`${SHOWN} .activity-open`).click();
  const entry = page.locator(`${SHOWN} .activity-entry[data-kind="permission.answer"]`).first();
  await entry.waitFor();
  await saveScreens(page, 'edges2-activity');
  assert.equal(await entry.locator('.activity-summary').innerText(), 'Allowed: Run git status --short', 'the card\'s words, not "Allowed run_command git status --short"');
  assert.equal(await entry.locator('.activity-who').innerText(), "the owner's access token", 'not "access token (owner)"');
  await entry.locator('.activity-entry-toggle').click();
  await entry.locator('.activity-details:not([hidden])').waitFor();
  assert.match(await entry.locator('.activity-details').innerText(), /Allowed run_command git status --short/, 'the line as recorded, in the details');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("a new chat's bar is as tall as the conversation it becomes, its mode selector where it stays; at 320 px not on a row of its own", async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await mkdir(join('test-output', 'screens'), { recursive: true });
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 320, height: 640 });
    await page.screenshot({ path: join('test-output', 'screens', `edges2-new-chat-320-${scheme}.png`) });
    const bar = await barRows(page);
    const toggle = await page.locator(`${SHOWN} .topbar .worktree-toggle`).evaluate((el) => Math.round(el.getBoundingClientRect().top + el.getBoundingClientRect().height / 2));
    assert.ok(bar.rows.length === 2 && bar.modeRow === toggle, `320px ${scheme}: the mode selector shares its row with "Own worktree" (${JSON.stringify({ ...bar, toggle })})`);
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await saveScreens(page, 'edges2-new-chat');
  const heights: Record<number, { height: number; modeRow: number }> = {};
  for (const width of [320, 360, 390]) {
    await page.setViewportSize({ width, height: 780 });
    const { height, modeRow } = await barRows(page);
    heights[width] = { height, modeRow };
  }
  rig.fake.script({ text: 'On it.', chunks: 1 });
  await sendMessage(page, 'Please refactor the payment reconciliation job');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'On it.' }).waitFor();
  await page.locator(`${SHOWN} .export-toggle`).waitFor();
  await saveScreens(page, 'edges2-first-reply');
  for (const width of [320, 360, 390]) {
    await page.setViewportSize({ width, height: 780 });
    const bar = await barRows(page);
    assert.deepEqual({ height: bar.height, modeRow: bar.modeRow }, heights[width], `${width}px: the bar keeps its height, the mode selector its row, when the new chat becomes a conversation`);
  }
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("the Changes sheet's hunk heads are whole at 360 and 390 px", async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'app.txt', content: CHANGED } }] }, { text: 'Edited app.txt.', chunks: 1 });
  await page.locator(`${SHOWN} .worktree-toggle input`).check();
  await sendMessage(page, 'Improve app.txt');
  await page.locator(`${SHOWN} .permission-card .button`, { hasText: /^Allow$/ }).click();
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'Edited app.txt.' }).waitFor();
  await page.locator(`${SHOWN} .changes-badge:has-text("1 changed")`).click();
  const heads = page.locator('.changes-panel .change-hunk-head .diff-hunk-header');
  await heads.nth(1).waitFor();
  await saveScreens(page, 'edges2-changes');
  for (const width of [320, 360, 390]) {
    await page.setViewportSize({ width, height: 780 });
    const cut = await heads.evaluateAll((all) => all.map((el) => ({ text: el.textContent, cut: el.scrollWidth > el.clientWidth + 0.5 })));
    assert.equal(cut.length, 2);
    assert.ok(
      cut.every((head) => !head.cut),
      `${width}px: every hunk head whole (${JSON.stringify(cut)})`,
    );
  }
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a message waiting offline for a conversation deleted on another device comes back to the message box, sent nowhere', async () => {
  const phone = await rig.openPhone();
  const { page, context } = phone;
  rig.fake.script({ text: 'First answer.', chunks: 1 });
  await sendMessage(page, 'A conversation to delete');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'First answer.' }).waitFor();
  const conversationId = (await machineItem(page, 'remote-assistant.conversation')) ?? '';
  assert.ok(conversationId, 'the page keeps the conversation it shows');

  await context.setOffline(true);
  await page.locator(`${SHOWN} .connection[data-state="closed"]`).waitFor();
  const UNSENT = 'Keep this text: the retry limit should be five';
  await sendMessage(page, UNSENT);
  await page.locator(`${SHOWN} .pending-note`).waitFor();
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  assert.equal((await other.request({ type: 'delete_conversation', conversation_id: conversationId })).status, 'ok');
  const asked = rig.fake.requests.length;
  await context.setOffline(false);
  await page.locator(`${SHOWN} .connection[data-state="open"]`).waitFor({ timeout: 30_000 });
  await page.waitForFunction((text) => (document.querySelector<HTMLTextAreaElement>('.machine-view:not([hidden]) .composer-input')?.value ?? '') === text, UNSENT);
  await saveScreens(page, 'edges2-unsent-back');
  assert.match(await page.locator(`${SHOWN} .messages`).innerText(), /Not sent: its conversation was deleted meanwhile\. What you typed is back in the message box\./, 'the note says why');
  assert.equal(await page.locator(`${SHOWN} .message.user`).count(), 0, 'no bubble claims it was sent');
  // Nothing went anywhere: no new conversation holds it, the model was not asked, the outbox let it go to the box.
  const listed = (await other.request({ type: 'list_conversations' })).data as { conversations: { id: string; title: string }[] };
  assert.ok(!listed.conversations.some((c) => c.title.includes('Keep this text')), `not sent into a new conversation: ${JSON.stringify(listed.conversations)}`);
  assert.equal(rig.fake.requests.length, asked, 'the model was not asked');
  assert.ok(!phone.sent.some((f) => f.type === 'chat' && f.message === UNSENT && !f.conversation_id), 'never sent as a new chat');
  const outbox = await machineItem(page, 'remote-assistant.outbox');
  assert.ok(!(outbox ?? '').includes('Keep this text'), `out of the outbox: ${outbox}`);
  other.close();
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("the message box grows with its text when it is made narrower (a phone turned, the editor's side bar resized): no line of it is hidden", async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await page.setViewportSize({ width: 720, height: 780 });
  const box = page.locator(`${SHOWN} .composer-input`);
  await box.fill('A draft long enough to take two lines at this width and more of them once the screen is narrower than it was.');
  const overflow = () => box.evaluate((input: HTMLTextAreaElement) => input.scrollHeight - input.clientHeight);
  assert.ok(
    (await overflow()) <= 1,
    `the text fits the box as typed (${await overflow()} px hidden; ${await box.evaluate((i: HTMLTextAreaElement) => [i.scrollHeight, i.clientHeight, i.offsetHeight, getComputedStyle(i).boxSizing].join(' '))})`,
  );
  // A ResizeObserver that changes its own element's size in its callback makes the browser report a loop (an error event).
  await page.evaluate(() => addEventListener('error', (event) => ((window as unknown as { loopErrors: string[] }).loopErrors ??= []).push(event.message)));
  await page.setViewportSize({ width: 320, height: 780 });
  // The box follows at a frame after the resize: waited for (5 s), failing if it never does.
  const followed = await page
    .waitForFunction(
      (selector) => {
        const input = document.querySelector<HTMLTextAreaElement>(selector)!;
        return input.scrollHeight - input.clientHeight <= 1;
      },
      `${SHOWN} .composer-input`,
      { timeout: 5_000 },
    )
    .then(
      () => true,
      () => false,
    );
  assert.ok(followed, `after the box narrowed, ${await overflow()} px of its text is hidden`);
  assert.deepEqual(await page.evaluate(() => (window as unknown as { loopErrors?: string[] }).loopErrors ?? []), [], 'no error event');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
