/**
 * The prompt card on a phone (src/web/chat/permission-cards.ts, preview-view.ts) and the rules editor
 * (rules-editor.ts), against real parts: the service in process with the fake OpenAI provider asking for
 * real tool calls, media/ served by a static server, Debian's chromium at a phone's size (390x844).
 * Runs after `node esbuild.mjs` (npm test), which writes media/chat-phone.js. Screenshots go to
 * test-output/screenshots/ (gitignored).
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { FakeOpenAI } from '../helpers/fake-openai';
import { PAGE_WAIT as WAIT, startPhoneRig, type PhonePage, type PhoneRig } from '../helpers/phone-rig';
import type { RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

const SCREENSHOTS = resolve('test-output/screenshots');
const numbered = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join('');

let rig: PhoneRig;
let fake: FakeOpenAI;
let svc: RunningService;
let workspace: PhoneRig['workspace'];

before(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  rig = await startPhoneRig({ permission_mode: 'ask' });
  ({ fake, svc, workspace } = rig);
});

after(async () => {
  await rig?.close();
});

/** A phone with a fresh browser profile, paired through the URL fragment and connected. */
const openPhone = (): Promise<PhonePage> => rig.openPhone();

async function send(page: Page, text: string): Promise<void> {
  const input = page.locator('.composer-input');
  await page.waitForFunction(() => !(document.querySelector('.composer-input') as HTMLTextAreaElement).disabled);
  await input.fill(text);
  await input.press('Enter');
}

async function replyShown(page: Page, text: string): Promise<void> {
  await page.waitForFunction((t) => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes(t) && !document.querySelector('.message.streaming'), text);
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });

/** Each row of the card's diff view as `<kind> <old> <new> <text>`. */
function diffRows(page: Page): Promise<string[]> {
  return page.locator('.permission-card .diff-line').evaluateAll((rows) =>
    // No named helper in here: the page runs this source as is (tsx's __name is not defined there).
    rows.map((row) =>
      [(row as HTMLElement).dataset.kind, ...['.diff-old', '.diff-new'].map((name) => row.querySelector(name)?.textContent?.trim() || '-'), row.querySelector('.diff-text')?.textContent ?? ''].join(
        ' ',
      ),
    ),
  );
}

test('a write_file request shows its diff: the path, hunks with old/new line numbers, + and - lines; and where it came from', async () => {
  await writeFile(join(workspace.dir, 'notes.txt'), numbered(1, 20));
  const phone = await openPhone();
  const { page } = phone;
  fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: numbered(1, 20).replace('line 10\n', 'line ten\n') } }] }, { text: 'Left as it was.', chunks: 1 });
  await send(page, 'rewrite line ten');
  const card = page.locator('.permission-card');
  await card.waitFor();
  assert.equal(await card.locator('.preview').getAttribute('data-kind'), 'diff');
  assert.equal((await card.locator('.diff-path').innerText()).trim(), 'notes.txt');
  assert.equal(await card.locator('.diff-new-file').count(), 0, 'an existing file is not marked new');
  assert.equal(await card.locator('.diff-open').count(), 0, 'no "Show diff" on the phone: there is no editor');
  assert.equal((await card.locator('.diff-hunk-header').innerText()).trim(), '@@ -7,7 +7,7 @@');
  assert.deepEqual(await diffRows(page), [
    'context 7 7 line 7',
    'context 8 8 line 8',
    'context 9 9 line 9',
    'del 10 - line 10',
    'add - 10 line ten',
    'context 11 11 line 11',
    'context 12 12 line 12',
    'context 13 13 line 13',
  ]);
  assert.match(await card.locator('.diff-stats').innerText(), /\+1\s+−1/);
  // Shown inside its own conversation: the prompt does not name it (phone-day-use.test.ts: it does elsewhere).
  await page.waitForFunction(() => document.querySelector('.permission-card .permission-source')?.textContent === 'Asked from this device');
  assert.ok(!(await card.innerText()).includes('"content"'), 'the diff, not the raw argument JSON');
  await shot(page, 'prompt-write-file-diff');
  await card.locator('button[data-decision="deny"]').click();
  await card.waitFor({ state: 'detached' });
  await replyShown(page, 'Left as it was.');
  assert.equal(await readFile(join(workspace.dir, 'notes.txt'), 'utf8'), numbered(1, 20), 'denied: the file is unchanged');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a long new file is cut after 80 lines with a visible marker, and "Show all" shows every line', async () => {
  const phone = await openPhone();
  const { page } = phone;
  fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'docs/long.md', content: numbered(1, 300) } }] }, { text: 'Not written.', chunks: 1 });
  await send(page, 'write a long file');
  const card = page.locator('.permission-card');
  await card.waitFor();
  assert.equal(await card.locator('.diff-new-file').innerText(), 'new file');
  assert.equal(await card.locator('.diff-line').count(), 80);
  assert.match(await card.locator('.diff-cut').innerText(), /220 more lines/);
  assert.equal(await card.locator('.diff-truncated').count(), 0, 'the service did not cut this diff');
  assert.deepEqual((await diffRows(page)).slice(0, 2), ['add - 1 line 1', 'add - 2 line 2']);
  await card.locator('.diff-show-all').click();
  assert.equal(await card.locator('.diff-line').count(), 300);
  assert.equal(await card.locator('.diff-cut').count(), 0);
  assert.equal((await diffRows(page)).at(-1), 'add - 300 line 300');
  await card.locator('button[data-decision="deny"]').click();
  await replyShown(page, 'Not written.');
  await phone.close();
});

test('an edit_file request shows the edit as a diff, long lines wrapped within the phone width', async () => {
  const long = `const message = "${'a very long string literal that goes on and on '.repeat(4).trim()}";`;
  await writeFile(join(workspace.dir, 'app.ts'), `${numbered(1, 5)}${long}\n${numbered(7, 12)}`);
  const phone = await openPhone();
  const { page } = phone;
  fake.script(
    { tool_calls: [{ name: 'edit_file', arguments: { path: 'app.ts', old_string: long, new_string: long.replace('const message', 'export const greeting') } }] },
    { text: 'Edit refused.', chunks: 1 },
  );
  await send(page, 'rename the message');
  const card = page.locator('.permission-card');
  await card.waitFor();
  assert.deepEqual(
    (await diffRows(page)).filter((row) => !row.startsWith('context')),
    [`del 6 - ${long}`, `add - 6 ${long.replace('const message', 'export const greeting')}`],
  );
  // Wrapped, not scrolled sideways: the card is no wider than the screen.
  const widths = await page.evaluate(() => ({ card: document.querySelector('.permission-card')!.scrollWidth, screen: document.documentElement.clientWidth }));
  assert.ok(widths.card <= widths.screen, `card ${widths.card}px within the ${widths.screen}px screen`);
  await shot(page, 'prompt-edit-file-diff');
  await card.locator('button[data-decision="deny"]').click();
  await replyShown(page, 'Edit refused.');
  await phone.close();
});

test('a run_command request shows the whole 300-character line, its cwd and timeout, and flags destructive parts', async () => {
  const command = `rm -rf build && echo ${'x'.repeat(300 - 'rm -rf build && echo '.length - 5)} done`;
  assert.equal(command.length, 300);
  const phone = await openPhone();
  const { page } = phone;
  fake.script({ tool_calls: [{ name: 'run_command', arguments: { command, timeout_seconds: 90 } }] }, { text: 'Did not run it.', chunks: 1 });
  await send(page, 'clean the build');
  const card = page.locator('.permission-card');
  await card.waitFor();
  assert.equal(await card.locator('.preview').getAttribute('data-kind'), 'command');
  assert.equal(await card.locator('.preview-command').textContent(), command, 'the whole line, never cut');
  assert.match(await card.locator('.preview-cwd').innerText(), /^in the workspace folder$/);
  assert.match(await card.locator('.preview-timeout').innerText(), /90 s/);
  const warnings = await card.locator('.preview-warnings li').allInnerTexts();
  assert.ok(
    warnings.some((w) => /rm -rf/.test(w)),
    `rm -rf flagged: ${warnings.join(' | ')}`,
  );
  assert.equal(await card.locator('.preview-warnings[role="alert"]').count(), 1, 'warnings are announced');
  await shot(page, 'prompt-run-command-destructive');
  await card.locator('button[data-decision="deny"]').click();
  await replyShown(page, 'Did not run it.');
  await phone.close();
});

test('the card offers Allow, Allow for this conversation, Always allow, Deny and Deny with a note', async () => {
  const phone = await openPhone();
  const { page } = phone;
  fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Listed.', chunks: 1 });
  await send(page, 'list it');
  const card = page.locator('.permission-card');
  await card.waitFor();
  assert.deepEqual(await card.locator('.permission-actions button').evaluateAll((b) => b.map((x) => (x as HTMLElement).dataset.decision ?? x.className)), [
    'allow',
    'allow_conversation',
    'allow_always',
    'deny',
    'button secondary permission-note-toggle',
  ]);
  await card.locator('.permission-note-toggle').click();
  assert.ok(await card.locator('textarea.permission-note').isVisible(), 'the note field opens');
  assert.equal(await card.locator('.preview').getAttribute('data-kind'), 'arguments');
  await card.locator('button[data-decision="allow"]').click();
  await card.waitFor({ state: 'detached' });
  // The answer's toast says the call in words (tool-words.ts), not the tool's name.
  assert.match(await page.locator('.permission-outcome').first().innerText(), /^List the workspace folder: Allowed/);
  await replyShown(page, 'Listed.');
  await phone.close();
});

test('the editor\'s chat view: the same card, plus "Show diff" asking the extension (showDiff with the request id)', async () => {
  const view = await rig.openEditorView();
  const { page, actions } = view;
  await writeFile(join(workspace.dir, 'editor.txt'), numbered(1, 5));
  fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'editor.txt', content: numbered(1, 6) } }] }, { text: 'Not now.', chunks: 1 });
  await send(page, 'append a line');
  const card = page.locator('.permission-card');
  await card.waitFor();
  assert.deepEqual(await diffRows(page).then((rows) => rows.filter((r) => !r.startsWith('context'))), ['add - 6 line 6']);
  const requestId = await card.getAttribute('data-request-id');
  await card.locator('.diff-open').click();
  assert.deepEqual(actions, [{ action: 'showDiff', argument: requestId }]);
  await card.locator('button[data-decision="deny"]').click();
  await card.waitFor({ state: 'detached' });
  await replyShown(page, 'Not now.');
  await view.close();
});

test('deny with a note: the note reaches the agent as the tool result', async () => {
  const phone = await openPhone();
  const { page } = phone;
  const note = 'Use the staging database, never production.';
  fake.script({ tool_calls: [{ name: 'run_command', arguments: { command: 'psql production -c "drop table users"' } }] }, { text: 'Understood, staging then.', chunks: 1 });
  await send(page, 'clean up users');
  const card = page.locator('.permission-card');
  await card.waitFor();
  await card.locator('.permission-note-toggle').click();
  await card.locator('textarea.permission-note').fill(note);
  await card.locator('.permission-note-send').click();
  await card.waitFor({ state: 'detached' });
  await replyShown(page, 'Understood, staging then.');
  const toolResult = fake.requests
    .flatMap((r) => (r.body as { messages?: { role: string; content: unknown }[] } | undefined)?.messages ?? [])
    .find((m) => m.role === 'tool' && String(m.content).includes(note));
  assert.ok(toolResult, 'the provider saw the note in the tool result');
  assert.match(String(toolResult.content), /denied/i);
  await phone.close();
});

test('a prompt that waited while the phone was away: after a reload it shows once, filled by list_pending_permissions and the re-sent event', async () => {
  const phone = await openPhone();
  const { page } = phone;
  fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Listed after the reload.', chunks: 1 });
  await send(page, 'list while I am away');
  await page.locator('.permission-card').waitFor();
  const received: string[] = [];
  const listed = new Promise<void>((done) =>
    page.on('websocket', (socket) =>
      socket.on('framereceived', (frame) => {
        received.push(String(frame.payload));
        if (String(frame.payload).includes('"requests"')) done();
      }),
    ),
  );
  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  await Promise.race([listed, page.waitForTimeout(WAIT).then(() => Promise.reject(new Error('no list_pending_permissions answer')))]);
  // Both the list's answer and the re-sent event have arrived: still one card.
  const events = () => received.filter((text) => text.includes('"permission.request"')).length;
  await page.waitForFunction(() => document.querySelectorAll('.permission-card').length === 1);
  assert.ok(events() >= 1, 'the service re-sent the request on authentication');
  assert.equal(await page.locator('.permission-card').count(), 1, 'no duplicate card');
  // The waiting call is stored and also re-sent by the catch-up: one tool card, waiting for its prompt (not "failed").
  const toolCards = page.locator('.tool-card[data-tool="list_directory"]');
  await page.waitForFunction(() => document.querySelector('.tool-card[data-tool="list_directory"] .tool-status')?.getAttribute('data-status') === 'waiting');
  assert.equal(await toolCards.count(), 1, 'one card for the waiting call');
  await page.locator('.permission-card button[data-decision="allow"]').click();
  await replyShown(page, 'Listed after the reload.');
  assert.equal(await toolCards.count(), 1);
  assert.equal(await toolCards.locator('.tool-status').getAttribute('data-status'), 'ok');
  await phone.close();
});

test('a conversation waiting for permission is marked in the list, and the header counts what waits', async () => {
  const phone = await openPhone();
  const { page } = phone;
  fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Done waiting.', chunks: 1 });
  await send(page, 'a waiting conversation');
  await page.locator('.permission-card').waitFor();
  await page.locator('.waiting-count:not([hidden])').waitFor();
  assert.match(await page.locator('.waiting-count').innerText(), /1/);
  await page.locator('.drawer-toggle').click();
  const row = page.locator('.conversation', { hasText: 'a waiting conversation' });
  await row.locator('.conversation-state[data-state="waiting"]').waitFor();
  assert.match(await row.locator('.conversation-state').innerText(), /waiting for you/);
  await page.keyboard.press('Escape');
  await page.locator('.permission-card button[data-decision="allow"]').click();
  await replyShown(page, 'Done waiting.');
  await page.locator('.waiting-count[hidden]').waitFor({ state: 'attached' });
  await phone.close();
});

test("the rules editor: rules from get_config, add and remove saved to service.json, the service's validation error shown", async () => {
  const probe = await TestClient.authed(svc.wsUrl, svc.token);
  await probe.request({ type: 'update_config', config: { permission_rules: { allow: ['read_file'], deny: ['run_command:rm *'] } } });
  const phone = await openPhone();
  const { page } = phone;
  await page.locator('.drawer-toggle').click();
  await page.locator('.rules-open').click();
  const editor = page.locator('.rules-editor');
  await editor.locator('.rule[data-list="deny"]', { hasText: 'run_command:rm *' }).waitFor();
  assert.deepEqual(await editor.locator('.rule[data-list="allow"] .rule-text').allInnerTexts(), ['read_file']);
  await editor.locator('.rules-add-list').selectOption('allow');
  await editor.locator('.rules-add-input').fill('run_command:git status');
  await editor.locator('.rules-add-button').click();
  await editor.locator('.rule[data-list="allow"]', { hasText: 'run_command:git status' }).waitFor();
  const saved = () => readFile(join(svc.dataDir, 'service.json'), 'utf8').then((text) => JSON.parse(text) as { permission_rules?: { allow: string[]; deny: string[] } });
  assert.deepEqual((await saved()).permission_rules, { allow: ['read_file', 'run_command:git status'], deny: ['run_command:rm *'] });
  await shot(page, 'rules-editor');
  await editor.locator('.rule[data-list="deny"] .rule-remove').click();
  await page.waitForFunction(() => !document.querySelector('.rule[data-list="deny"]'));
  assert.deepEqual((await saved()).permission_rules, { allow: ['read_file', 'run_command:git status'], deny: [] });
  // A rule the service refuses: its message is shown, nothing saved.
  await editor.locator('.rules-add-input').fill('not a tool!:x');
  await editor.locator('.rules-add-button').click();
  await editor.locator('.rules-error:not(:empty)').waitFor();
  assert.deepEqual((await saved()).permission_rules, { allow: ['read_file', 'run_command:git status'], deny: [] });
  await probe.request({ type: 'update_config', config: { permission_rules: { allow: [], deny: [] } } });
  probe.close();
  await phone.close();
});
