/**
 * The chat UI on a phone, against real parts: the service in process with the fake OpenAI provider,
 * media/ served by a static server, and Debian's chromium (playwright-core) at a phone's size.
 * Runs after `node esbuild.mjs` (npm test), which writes media/chat-phone.js.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, serveStatic, type StaticServer } from '../helpers/browser';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService, type RunningService } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const MEDIA = resolve('media');
const ARTIFACTS = resolve('test-artifacts/web');
const WAIT = 10_000;

let fake: FakeOpenAI;
let svc: RunningService;
let restarted: RunningService | undefined;
let site: StaticServer;
let browser: Browser;
let page: Page;
let workspace: { dir: string; cleanup: () => Promise<void> };
const pageErrors: string[] = [];
/** Every frame the page sent to the service, in order (the command types are counted by tests). */
const sentFrames: string[] = [];

const config = () => ({ base_url: fake.url, model: 'fake-model', workspace: workspace.dir, permission_mode: 'ask' });

before(async () => {
  assert.ok(existsSync(join(MEDIA, 'chat-phone.js')), 'media/chat-phone.js is missing: run `node esbuild.mjs` first');
  await mkdir(ARTIFACTS, { recursive: true });
  workspace = await tempDir('ra-web-workspace-');
  fake = await startFakeOpenAI();
  svc = await startService(config());
  site = await serveStatic(MEDIA);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  page.on('websocket', (socket) => socket.on('framesent', (frame) => sentFrames.push(String(frame.payload))));
  page.on('dialog', (dialog) => void dialog.dismiss());
});

after(async () => {
  await browser?.close();
  await site?.close();
  await restarted?.stop();
  await svc?.dispose();
  await fake?.close();
  await workspace?.cleanup();
});

const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });

async function send(text: string): Promise<void> {
  const input = page.locator('.composer-input');
  await input.waitFor({ state: 'visible' });
  await page.waitForFunction(() => !(document.querySelector('.composer-input') as HTMLTextAreaElement).disabled);
  await input.fill(text);
  await input.press('Enter');
}

async function openDrawer(): Promise<void> {
  if (!(await page.locator('.app.drawer-open').count())) await page.locator('.drawer-toggle').click();
  await page.locator('.drawer .new-chat').waitFor({ state: 'visible' });
}

async function assertTokenHidden(): Promise<void> {
  assert.ok(!page.url().includes(svc.token), 'token not in the address bar');
  assert.ok(!page.url().includes('#'), 'fragment removed');
  const html = await page.evaluate(() => document.documentElement.outerHTML + document.body.innerText);
  assert.ok(!html.includes(svc.token), 'token not in the DOM');
  assert.ok(!site.requests.some((r) => r.includes(svc.token)), 'token never sent to the web server');
}

test('the page connects with the pairing from the fragment, then hides the token', async () => {
  const url = `${site.url}/phone.html#url=${encodeURIComponent(svc.wsUrl)}&token=${encodeURIComponent(svc.token)}`;
  await page.goto(url);
  await page.locator('.connection[data-state="open"]').waitFor();
  assert.equal((await page.locator('.connection').innerText()).trim(), 'Connected');
  await page.waitForFunction(() => (document.querySelector('.mode-select') as HTMLSelectElement).value === 'ask' && !(document.querySelector('.mode-select') as HTMLSelectElement).disabled);
  await assertTokenHidden();
  await shot('01-connected');
});

test('a streamed reply appears progressively and ends rendered as markdown with a copyable code block', async () => {
  const text = 'Here is **the answer** with some code:\n\n```js\nconsole.log("hello from the fake");\n```\n\nAnd a final line, all done.';
  fake.script({ text, chunks: 10, chunkDelayMs: 120 });
  await send('show me code');
  assert.equal(await page.locator('.message.user .plain').last().innerText(), 'show me code');
  // Part of the reply is on screen while the rest is still coming, and Stop replaces Send.
  await page.waitForFunction(() => {
    const streaming = document.querySelector('.message.assistant.streaming');
    return !!streaming && (streaming.textContent ?? '').length > 5 && !(streaming.textContent ?? '').includes('all done');
  });
  assert.ok(await page.locator('.composer .stop').isVisible(), 'Stop shown while the chat runs');
  await shot('02-streaming');
  await page.locator('.message.assistant:not(.streaming)').last().waitFor();
  await page.waitForFunction(() => document.querySelector('.message.assistant:last-of-type strong')?.textContent === 'the answer');
  const reply = page.locator('.message.assistant').last();
  assert.match(await reply.innerText(), /all done\./);
  assert.equal(await reply.locator('strong').innerText(), 'the answer');
  assert.equal((await reply.locator('.code-block pre code').innerText()).trim(), 'console.log("hello from the fake");');
  assert.equal(await reply.locator('.code-block .copy-button').innerText(), 'Copy');
  assert.ok(!(await reply.innerText()).includes('**'), 'markdown rendered, not shown raw');
  assert.ok(await page.locator('.composer .send').isVisible(), 'Send is back');
  await shot('03-markdown-reply');
});

test('HTML in a reply never runs and shows no raw tags', async () => {
  fake.script({ text: 'Careful: <img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script> [click](javascript:window.__pwned=3) <b>bold</b> end.', chunks: 4 });
  await send('try to inject');
  await page.waitForFunction(() => /end\./.test(document.querySelector('.message.assistant:last-of-type')?.textContent ?? '') && !document.querySelector('.message.streaming'));
  const reply = page.locator('.message.assistant').last();
  await reply
    .locator('a')
    .first()
    .click()
    .catch(() => undefined);
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned), undefined, 'nothing executed');
  const shown = await reply.innerText();
  assert.ok(!/<img|<script|onerror/i.test(shown), `no raw tags shown: ${shown}`);
  assert.equal(await page.locator('.message-list img, .message-list script').count(), 0);
  assert.equal(await reply.locator('a[href^="javascript"]').count(), 0);
  assert.equal(await reply.locator('b').innerText(), 'bold', 'harmless formatting kept');
  assert.deepEqual(pageErrors, []);
});

test('the conversation list shows conversations, switching loads history, delete removes one', async () => {
  await openDrawer();
  await page.locator('.conversation').first().waitFor();
  assert.equal(await page.locator('.conversation').count(), 1);
  assert.match(await page.locator('.conversation-title').first().innerText(), /show me code/);
  await shot('04-drawer');
  await page.locator('.drawer .new-chat').click();
  assert.equal(await page.locator('.app.drawer-open').count(), 0, 'the drawer closes');
  await send('a second conversation');
  await page.waitForFunction(() => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('echo: a second conversation'));
  await openDrawer();
  await page.waitForFunction(() => document.querySelectorAll('.conversation').length === 2);
  // Newest first: the second conversation is on top and is the current one.
  assert.match(await page.locator('.conversation-title').first().innerText(), /a second conversation/);
  assert.equal(await page.locator('.conversation').first().locator('[aria-current="true"]').count(), 1);

  await page.locator('.conversation-open', { hasText: 'show me code' }).click();
  await page.waitForFunction(() => (document.querySelector('.message-list')?.textContent ?? '').includes('all done'));
  assert.equal(await page.locator('.message.user').count(), 2, 'both messages of the first conversation');
  assert.equal(await page.locator('.message.user', { hasText: 'a second conversation' }).count(), 0);
  assert.equal(await page.locator('.message.assistant .code-block .copy-button').count(), 1);
  assert.match(await page.locator('.title').innerText(), /show me code/);

  await openDrawer();
  const second = page.locator('.conversation', { hasText: 'a second conversation' });
  await second.locator('.conversation-delete').click();
  await second.locator('.confirm-delete').click();
  await page.waitForFunction(() => document.querySelectorAll('.conversation').length === 1);
  const probe = await TestClient.authed(svc.wsUrl, svc.token);
  const listed = (await probe.request({ type: 'list_conversations' })).data as { conversations: { title: string }[] };
  assert.deepEqual(
    listed.conversations.map((c) => c.title),
    ['show me code'],
  );
  probe.close();
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('.app.drawer-open').count(), 0);
});

test('ask mode: a tool call shows a permission card; Allow runs it and the card closes', async () => {
  fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'The directory is listed.', chunks: 3 });
  await send('list the workspace');
  const card = page.locator('.permission-card');
  await card.waitFor();
  assert.equal(await card.locator('.permission-title').innerText(), 'List the workspace folder?', 'the question in words (s26)');
  assert.match(await card.innerText(), /Asked from this device/, 'the card says who asked: this page (it holds the access token)');
  assert.deepEqual(await card.locator('.permission-actions button[data-decision]').evaluateAll((b) => b.map((x) => (x as HTMLElement).dataset.decision)), [
    'allow',
    'allow_conversation',
    'allow_always',
    'deny',
  ]);
  await shot('05-permission');
  await card.locator('button[data-decision="allow"]').click();
  await card.waitFor({ state: 'detached' });
  await page.waitForFunction(
    () => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('The directory is listed.') && !document.querySelector('.message.streaming'),
  );
  const tool = page.locator('.tool-card').last();
  assert.equal(await tool.locator('.tool-words').innerText(), 'Listed the workspace folder');
  assert.equal(await tool.locator('.tool-status').getAttribute('data-status'), 'ok');
  await shot('06-tool-done');
});

test('a chat turn costs no list_conversations round trip: the list and a denied tool follow the events alone', async () => {
  const other = await TestClient.authed(svc.wsUrl, svc.token);
  const commandsSent = (from: number) => sentFrames.slice(from).map((text) => (JSON.parse(text) as { type?: string }).type);
  await other.request({ type: 'update_config', config: { permission_mode: 'deny' } });
  await page.waitForFunction(() => (document.querySelector('.mode-select') as HTMLSelectElement).value === 'deny');
  await openDrawer();
  await page.locator('.drawer .new-chat').click();
  const mark = sentFrames.length;

  // 1. This page chats; the tool is refused by the mode: the card says denied (from tool.result, not guessed).
  fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Answered without the tool.', chunks: 2 });
  await send('a turn counted frame by frame');
  await page.waitForFunction(
    () => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('Answered without the tool.') && !document.querySelector('.message.streaming'),
  );
  assert.equal(await page.locator('.tool-card').last().locator('.tool-status').getAttribute('data-status'), 'denied');

  // 2. Another client starts a conversation: its row reaches both clients in conversation.updated.
  const updated = other.next((f) => f.event === 'conversation.updated' && (f.conversation as { title?: string } | undefined)?.title === 'from another client');
  await other.request({ type: 'chat', message: 'from another client' });
  const row = (await updated).conversation as { id: string; title: string; source: string; created_at: string; updated_at: string };
  assert.equal(row.source, 'ws');
  assert.ok(row.created_at && row.updated_at, 'the whole row, as list_conversations gives it');
  await openDrawer();
  await page.waitForFunction(() => (document.querySelector('.conversation-title')?.textContent ?? '').includes('from another client'));
  assert.equal(await page.locator('.conversation', { hasText: 'a turn counted frame by frame' }).count(), 1);
  await page.keyboard.press('Escape');

  const sent = commandsSent(mark);
  assert.ok(sent.includes('chat'), `the page's chat was counted: ${sent.join(', ')}`);
  assert.equal(sent.filter((type) => type === 'list_conversations').length, 0, `no list_conversations round trip: ${sent.join(', ')}`);
  await other.request({ type: 'update_config', config: { permission_mode: 'ask' } });
  await page.waitForFunction(() => (document.querySelector('.mode-select') as HTMLSelectElement).value === 'ask');
  other.close();
});

test('history: each tool card reads its outcome from get_messages (tool_kind, ok, denied), even when a result looks like a call', async () => {
  // A result whose text is a JSON object, right after its call: shaped like another call's arguments.
  await writeFile(join(workspace.dir, 'data.json'), '{"answer": 42}');
  await openDrawer();
  await page.locator('.drawer .new-chat').click();
  const answerCard = async (decision: 'allow' | 'deny', reply: string) => {
    const card = page.locator('.permission-card');
    await card.waitFor();
    await card.locator(`button[data-decision="${decision}"]`).click();
    await card.waitFor({ state: 'detached' });
    await page.waitForFunction((text) => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes(text) && !document.querySelector('.message.streaming'), reply);
  };
  fake.script({ tool_calls: [{ name: 'read_file', arguments: { path: 'data.json' } }] }, { text: 'It says 42.', chunks: 1 });
  await send('history with tools');
  await answerCard('allow', 'It says 42.');
  fake.script({ tool_calls: [{ name: 'read_file', arguments: { path: 'data.json' } }] }, { text: 'Not read again.', chunks: 1 });
  await send('read it once more');
  await answerCard('deny', 'Not read again.');
  const live = await page.locator('.tool-card .tool-status').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-status')));
  assert.deepEqual(live, ['ok', 'denied'], 'live, from tool.result');

  // Away and back: the conversation is drawn from get_messages alone.
  await openDrawer();
  await page.locator('.drawer .new-chat').click();
  await openDrawer();
  await page.locator('.conversation-open', { hasText: 'history with tools' }).click();
  await page.waitForFunction(() => (document.querySelector('.message-list')?.textContent ?? '').includes('Not read again.'));
  const cards = page.locator('.tool-card');
  assert.deepEqual(await cards.locator('.tool-status').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-status'))), ['ok', 'denied'], 'from history, the same outcomes');
  assert.match((await cards.first().locator('.tool-output').textContent()) ?? '', /"answer": 42/, "the JSON result is the first call's output, not a second call");
});

test('the permission mode select updates the service, and follows changes made elsewhere', async () => {
  const other = await TestClient.authed(svc.wsUrl, svc.token);
  await page.locator('.mode-select').selectOption('deny');
  await other.next((f) => f.event === 'config.changed');
  const config = await other.request({ type: 'get_config' });
  assert.equal((config.data as { permission_mode: string }).permission_mode, 'deny');
  // Another client changes it: the select follows (config.changed + get_config).
  await other.request({ type: 'update_config', config: { permission_mode: 'allow' } });
  await page.waitForFunction(() => (document.querySelector('.mode-select') as HTMLSelectElement).value === 'allow');
  await other.request({ type: 'update_config', config: { permission_mode: 'ask' } });
  await page.waitForFunction(() => (document.querySelector('.mode-select') as HTMLSelectElement).value === 'ask');
  other.close();
});

test('a provider failure is said at the turn, in words the phone user can act on, with Retry', async () => {
  fake.script({ status: 401 });
  await send('this one fails');
  const failure = page.locator('.turn-failure');
  await failure.waitFor({ state: 'visible' });
  assert.equal(await failure.locator('.turn-failure-text').innerText(), "The computer's OpenAI key was refused: set it on the computer, then retry.");
  assert.equal(await failure.locator('button', { hasText: 'Set API Key' }).count(), 0, 'editor-only buttons not on the phone');
  assert.equal(await failure.locator('button.turn-retry').count(), 1);
  await shot('07-provider-error');
});

test('a conversation deleted on another device leaves the list, and the page showing it says so', async () => {
  const other = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const id = ((await other.request({ type: 'chat', message: 'from another device' })).data as { conversation_id: string }).conversation_id;
    await openDrawer();
    await page.locator('.conversation-open', { hasText: 'from another device' }).click();
    await page.waitForFunction(() => (document.querySelector('.message-list')?.textContent ?? '').includes('echo: from another device'));
    const listedBefore = await page.locator('.conversation').count();
    assert.equal((await other.request({ type: 'delete_conversation', conversation_id: id })).status, 'ok');
    await page.locator('.message-list', { hasText: 'That conversation was deleted on another device.' }).waitFor();
    assert.equal(await page.locator('.message.user', { hasText: 'from another device' }).count(), 0, 'its messages left the screen');
    await openDrawer();
    assert.equal(await page.locator('.conversation', { hasText: 'from another device' }).count(), 0, 'gone from the list');
    assert.equal(await page.locator('.conversation').count(), listedBefore - 1);
    await page.keyboard.press('Escape');
    await shot('08-deleted-elsewhere');
  } finally {
    other.close();
  }
});

test('the page reconnects by itself after the service restarts on the same port, and chats again', async () => {
  const port = Number(new URL(svc.wsUrl).port);
  await svc.stop();
  await page.locator('.connection:not([data-state="open"])').waitFor();
  // Typing still works offline: a message waits in the outbox (its own test is in phone-follow.test.ts).
  assert.ok(await page.locator('.composer-input').isEnabled(), 'composer usable while disconnected');
  assert.match((await page.locator('.composer-input').getAttribute('placeholder')) ?? '', /Offline/);
  await shot('09-disconnected');
  restarted = await startService(config(), { dataDir: svc.dataDir, keepConfig: true, port });
  await page.locator('.connection[data-state="open"]').waitFor({ timeout: 20_000 });
  await send('are you back?');
  await page.waitForFunction(() => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('echo: are you back?'));
  await assertTokenHidden();
  await shot('10-reconnected');
  assert.deepEqual(pageErrors, []);
});
