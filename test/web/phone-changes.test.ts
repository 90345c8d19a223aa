/**
 * Review and land from the phone (issue 24): the Changes view (src/web/chat/changes-view.ts) against real
 * parts: the service in process over a real git repository in a temp dir, the fake OpenAI provider making
 * real tool calls in the conversation's own worktree, Debian's chromium at a phone's size. A new chat with
 * "Own worktree" on, the "1 changed" badge, the file's two hunks, one reverted, a comment on a line that
 * reaches the model quoted, a commit and a merge into the user's branch. Screenshots of the view at 390 and
 * 320 px, light and dark, go to test-output/screens/. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { git, gitRepository } from '../helpers/git-repo';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { tempDir } from '../helpers/temp';

const SCREENS = join('test-output', 'screens');
const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join('');
const BEFORE = lines(30);
const CHANGED = BEFORE.replace('line 3\n', 'line 3 by the assistant\n').replace('line 25\n', 'line 25 by the assistant\n');

let rig: PhoneRig;
let repo: string;
let cleanup: () => Promise<void>;

before(async () => {
  const temp = await tempDir('ra-phone-changes-');
  cleanup = temp.cleanup;
  repo = join(await realpath(temp.dir), 'repo');
  await gitRepository(repo, { 'app.txt': BEFORE });
  rig = await startPhoneRig({ permission_mode: 'allow', workspace: repo });
});

after(async () => {
  await rig?.close();
  await cleanup?.();
});

async function screens(page: Page, name: string): Promise<void> {
  await mkdir(SCREENS, { recursive: true });
  for (const width of [390, 320]) {
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.setViewportSize({ width, height: 844 });
      await page.emulateMedia({ colorScheme });
      await page.screenshot({ path: join(SCREENS, `changes-${name}-${width}-${colorScheme}.png`) });
    }
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await page.emulateMedia({ colorScheme: 'light' });
}

test('the phone reviews a worktree conversation: revert a hunk, comment on a line, commit and land', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;

  // A new chat in its own worktree: the assistant edits app.txt there, never in the user's tree.
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'app.txt', content: CHANGED } }] }, { text: 'Edited app.txt.' });
  const toggle = page.locator('.worktree-toggle');
  await toggle.locator('input').check();
  await page.locator('.composer-input').fill('Improve app.txt');
  await page.locator('.composer .send').click();
  await page.locator('.message.assistant', { hasText: 'Edited app.txt.' }).waitFor();
  const chat = rig.fake.requests.find((r) => JSON.stringify(r.body).includes('Improve app.txt'));
  assert.ok(chat, 'the model was asked');
  assert.ok(
    phone.sent.some((frame) => frame.type === 'chat' && frame.worktree === true),
    'the new chat asked for its own worktree',
  );
  assert.equal(await readFile(join(repo, 'app.txt'), 'utf8'), BEFORE, "the user's file is untouched");
  assert.equal(await toggle.isHidden(), true, 'the toggle is for new chats only');

  // The header's badge opens the Changes view: the file, its status, its two hunks.
  const badge = page.locator('.changes-badge');
  await page.locator('.changes-badge:has-text("1 changed")').waitFor();
  assert.match((await badge.getAttribute('aria-label')) ?? '', /^1 changed: review the changes on assistant\//);
  await badge.click();
  const panel = page.locator('.changes-panel');
  const file = panel.locator('.change-file[data-path="app.txt"]');
  await file.waitFor();
  assert.match(await panel.locator('.changes-branch').innerText(), /assistant\/.* from main/);
  assert.equal(await file.locator('.change-file-status').innerText(), 'modified');
  assert.equal(await file.locator('.diff-stats').innerText(), '+2 −2');
  assert.equal(await file.locator('.change-hunk').count(), 2);
  assert.equal(await file.locator('.change-hunk').nth(0).locator('.diff-line[data-kind="add"] .diff-text').innerText(), 'line 3 by the assistant');
  await screens(page, 'review');
  // Every control of the sheet is a 44x44 px tap target at 320 px (a diff line is also tappable, with Comment as the 44 px way).
  await page.setViewportSize({ width: 320, height: 844 });
  const small = await panel
    .locator('button:visible, select:visible, textarea:visible')
    .evaluateAll((controls) => controls.map((c) => ({ text: c.textContent?.trim() || c.className, ...c.getBoundingClientRect().toJSON() })).filter((r) => r.width < 44 || r.height < 44));
  assert.deepEqual(small, []);
  // Each hunk's head is one row at 320 px: Comment and Revert beside its range, at the same place on every hunk.
  const heads = await file.locator('.change-hunk-head').evaluateAll((all) =>
    all.map((head) => {
      const [text, actions] = [head.querySelector('.diff-hunk-header')!, head.querySelector('.change-hunk-actions')!].map((el) => el.getBoundingClientRect());
      return { oneRow: text.top < actions.bottom && actions.top < text.bottom, actionsRight: Math.round(actions.right) };
    }),
  );
  assert.ok(heads.length === 2 && heads.every((head) => head.oneRow), `each hunk head on one row: ${JSON.stringify(heads)}`);
  assert.equal(new Set(heads.map((head) => head.actionsRight)).size, 1, `the actions at one place: ${JSON.stringify(heads)}`);
  await page.setViewportSize({ width: 390, height: 844 });

  // Revert the second hunk: the first stays, in the view and in the worktree.
  const worktreePath = JSON.parse(
    git(repo, 'worktree', 'list', '--porcelain')
      .split('\n')
      .filter((l) => l.startsWith('worktree '))
      .map((l) => JSON.stringify(l.slice(9)))[1]!,
  ) as string;
  await file.locator('.change-hunk').nth(1).locator('.change-revert-hunk').click();
  await panel.locator('.changes-status', { hasText: 'Reverted a hunk of app.txt.' }).waitFor();
  assert.equal(await file.locator('.change-hunk').count(), 1);
  assert.equal(await readFile(join(worktreePath, 'app.txt'), 'utf8'), BEFORE.replace('line 3\n', 'line 3 by the assistant\n'));

  // Comment on a line: tap it, type, send; the chat comes back and the model gets the line quoted.
  rig.fake.script({ text: 'Renamed it.' });
  await file.locator('.change-line[data-line="3"]').click();
  const form = file.locator('.change-comment-form');
  assert.equal(await form.locator('.change-comment-label').innerText(), 'Comment on line 3 of app.txt');
  await screens(page, 'comment');
  await form.locator('textarea').fill('Say what the assistant did instead.');
  await form.locator('.change-comment-send').click();
  assert.equal(await panel.isHidden(), true, 'the view jumps to the chat');
  await page.locator('.message.assistant', { hasText: 'Renamed it.' }).waitFor();
  const asked = JSON.stringify(rig.fake.requests.at(-1)!.body.messages);
  assert.match(asked, /Review comment on `app\.txt`, line 3:\\n\\nSay what the assistant did instead\./);
  assert.match(asked, /\\n-line 3\\n\+line 3 by the assistant/, 'the hunk is quoted');

  // Commit with a typed message, then land by merge into the user's main.
  await badge.click();
  await panel.locator('.change-commit-message').fill('Say who changed line 3');
  await panel.locator('.change-commit').click();
  await panel.locator('.changes-status', { hasText: /^Committed [0-9a-f]{7}\.$/ }).waitFor();
  assert.equal(git(worktreePath, 'log', '-1', '--format=%s').trim(), 'Say who changed line 3');
  await screens(page, 'committed');
  await panel.locator('.change-land-method').selectOption('merge');
  await panel.locator('.change-land').click();
  await panel.locator('.changes-status', { hasText: /^Landed into main/ }).waitFor();
  assert.equal(await readFile(join(repo, 'app.txt'), 'utf8'), BEFORE.replace('line 3\n', 'line 3 by the assistant\n'), "landed in the user's tree");
  assert.equal(git(repo, 'status', '--porcelain'), '', "nothing half-done in the user's tree");
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("a land the user's own edits would overwrite is refused on the phone, naming the file", async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const landed = await readFile(join(repo, 'app.txt'), 'utf8');
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'app.txt', content: `${landed}one more\n` } }] }, { text: 'Appended.' });
  await page.locator('.worktree-toggle input').check();
  await page.locator('.composer-input').fill('Append a line');
  await page.locator('.composer .send').click();
  await page.locator('.message.assistant', { hasText: 'Appended.' }).waitFor();
  // The person edits the same file in their own tree meanwhile (uncommitted).
  const mine = `${landed}my own edit\n`;
  await writeFile(join(repo, 'app.txt'), mine);
  const status = git(repo, 'status', '--porcelain');

  // Committed with a message the model drafted.
  await page.locator('.changes-badge').click();
  const panel = page.locator('.changes-panel');
  assert.equal(await panel.locator('.change-land').count(), 0, 'nothing committed: nothing to land yet');
  rig.fake.script({ text: 'Append one more line to app.txt' });
  await panel.locator('.change-draft').click();
  await panel.locator('.changes-status', { hasText: 'Drafted' }).waitFor();
  assert.equal(await panel.locator('.change-commit-message').inputValue(), 'Append one more line to app.txt');
  await panel.locator('.change-commit').click();
  await panel.locator('.change-land').click();
  const blocked = panel.locator('.change-land-blocked');
  await blocked.waitFor();
  assert.equal(await blocked.getAttribute('data-reason'), 'uncommitted');
  assert.deepEqual(await blocked.locator('.change-land-files li').allInnerTexts(), ['app.txt']);
  await screens(page, 'blocked');
  assert.equal(await readFile(join(repo, 'app.txt'), 'utf8'), mine, 'nothing changed');
  assert.equal(git(repo, 'status', '--porcelain'), status);

  // Discard asks first, then removes the worktree: the badge goes.
  await panel.locator('.change-discard').click();
  await panel.locator('.change-discard-confirm').click();
  await panel.locator('.changes-status', { hasText: 'Discarded.' }).waitFor();
  await panel.locator('.changes-close').click();
  await page.locator('.changes-badge').waitFor({ state: 'hidden' });
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("the new chat's worktree toggle starts from service.json's default for the phone's source, and an unticked one is said", async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const toggle = page.locator('.worktree-toggle input');
  assert.equal(await toggle.isChecked(), false, 'off by default');
  // The phone connects as a LAN client here: worktrees.default.lan on, the toggle follows (config.changed).
  await rig.svc.service.config.edit((raw) => void (raw.worktrees = { default: { lan: true } }));
  try {
    await page.waitForFunction(() => document.querySelector<HTMLInputElement>('.worktree-toggle input')?.checked === true);
    // Unticked by the person: the chat says worktree false, so the service's default does not apply.
    await toggle.uncheck();
    rig.fake.script({ text: 'In the workspace.' });
    await page.locator('.composer-input').fill('Stay in the workspace');
    await page.locator('.composer .send').click();
    await page.locator('.message.assistant', { hasText: 'In the workspace.' }).waitFor();
    assert.ok(phone.sent.some((frame) => frame.type === 'chat' && frame.message === 'Stay in the workspace' && frame.worktree === false));
    await page.locator('.changes-badge').waitFor({ state: 'hidden' });
  } finally {
    await rig.svc.service.config.edit((raw) => void delete raw.worktrees);
  }
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('attack: a file name with markup, a line break and a right-to-left override shows as text on the phone, escaped, never as markup', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  // The model names the file: markup that would run as HTML, and U+202E that shows "gnp.txt" as "txt.png".
  const name = `<img src=x onerror="window.__pwned=1">\nx\u202egnp.txt`;
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: name, content: 'hello\n' } }] }, { text: 'Made it.' });
  await page.locator('.worktree-toggle input').check();
  await page.locator('.composer-input').fill('Make the odd file');
  await page.locator('.composer .send').click();
  await page.locator('.message.assistant', { hasText: 'Made it.' }).waitFor();
  await page.locator('.changes-badge').click();
  const panel = page.locator('.changes-panel');
  const shown = panel.locator('.change-file .diff-path').first();
  await shown.waitFor();
  assert.equal(await shown.innerText(), '"<img src=x onerror=\\"window.__pwned=1\\">\\nx\\u202egnp.txt"');
  assert.equal(await panel.locator('img').count(), 0, 'no element made from the name');
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
