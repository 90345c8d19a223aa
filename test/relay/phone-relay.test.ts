/**
 * The phone page through the relay, in Debian's chromium at a phone's size: the real Node relay serving
 * the page (media/) and relaying to the real service (fake OpenAI provider). Pair from the fragment URL
 * of create_pairing, chat with streaming, approve a tool prompt, change the permission mode, ride out
 * a machine restart. Runs after `node esbuild.mjs` (npm test). Screenshots: test-artifacts/phone-relay/.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService, type RunningService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';
import { RELAY_TOKEN, startRelay, type RunningRelay } from '../helpers/relay-link-harness';

const MEDIA = resolve('media');
const ARTIFACTS = resolve('test-artifacts/phone-relay');
const WAIT = 15_000;
const FAST = { baseDelayMs: 50, maxDelayMs: 300 };

let fake: FakeOpenAI;
let relay: RunningRelay;
let svc: RunningService;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let workspace: { dir: string; cleanup: () => Promise<void> };
let pairing: { pairing_url: string; pairing_secret: string; machine_key: string };
const pageErrors: string[] = [];
/** Every frame the browser sent or received on its sockets (all of them go through the relay). */
const socketFrames: string[] = [];

before(async () => {
  assert.ok(existsSync(join(MEDIA, 'chat-phone.js')), 'media/chat-phone.js is missing: run `node esbuild.mjs` first');
  await mkdir(ARTIFACTS, { recursive: true });
  workspace = await tempDir('ra-phone-workspace-');
  fake = await startFakeOpenAI();
  relay = await startRelay(0, MEDIA);
  svc = await startService(
    { base_url: fake.url, model: 'fake-model', workspace: workspace.dir, permission_mode: 'ask', channels: [{ name: 'relay', type: 'websocket', url: relay.wsUrl, auth_token: RELAY_TOKEN }] },
    { relay: FAST },
  );
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  page.on('websocket', (ws) => {
    ws.on('framesent', (f) => socketFrames.push(String(f.payload)));
    ws.on('framereceived', (f) => socketFrames.push(String(f.payload)));
  });
});

after(async () => {
  await browser?.close();
  await svc?.dispose();
  await relay?.close();
  await fake?.close();
  await workspace?.cleanup();
});

const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
const connected = () => page.locator('.connection[data-state="open"]').waitFor();

async function send(text: string): Promise<void> {
  const input = page.locator('.composer-input');
  await input.waitFor({ state: 'visible' });
  await page.waitForFunction(() => !(document.querySelector('.composer-input') as HTMLTextAreaElement).disabled);
  await input.fill(text);
  await input.press('Enter');
}

async function lastReplyIncludes(text: string): Promise<void> {
  await page.waitForFunction((t) => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes(t) && !document.querySelector('.message.streaming'), text);
}

test('the phone pairs from the fragment URL of create_pairing, through the relay', async () => {
  const lan = await TestClient.authed(svc.wsUrl, svc.token);
  const reply = await lan.request({ type: 'create_pairing' });
  lan.close();
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  pairing = reply.data as typeof pairing;
  assert.ok(pairing.pairing_url.startsWith(`${relay.httpUrl}/#`), 'the page is served by the relay');

  await page.goto(pairing.pairing_url);
  await connected();
  await page.waitForFunction(() => (document.querySelector('.mode-select') as HTMLSelectElement).value === 'ask');
  assert.ok(!page.url().includes('#'), 'fragment removed from the address bar');
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }));
  assert.ok(!stored.includes(pairing.pairing_secret), 'the spent pairing secret is not kept');
  assert.ok(stored.includes('remote-assistant.client-key'), 'the phone keeps its key pair');
  const html = await page.evaluate(() => document.documentElement.outerHTML + document.body.innerText);
  assert.ok(!html.includes(svc.token), 'token not in the DOM');
  await shot('01-paired');
  await page.locator('.drawer-toggle').click();
  const footer = page.locator('.drawer .paired-with');
  await footer.waitFor({ state: 'visible' });
  assert.equal(await footer.innerText(), `Via relay: ${new URL(relay.httpUrl).host} (end-to-end encrypted)`);
  await shot('01b-drawer-relay');
  await page.locator('.drawer-toggle').click();
});

test('a streamed reply arrives progressively through the tunnel', async () => {
  const reply = 'Streaming **through the relay**, piece by piece, ending with the word DONE-7781.';
  fake.script({ text: reply, chunks: 8, chunkDelayMs: 150 });
  await send('a private question for the relay test');
  await page.waitForFunction(() => {
    const streaming = document.querySelector('.message.assistant.streaming');
    return !!streaming && (streaming.textContent ?? '').length > 5 && !(streaming.textContent ?? '').includes('DONE-7781');
  });
  await shot('02-streaming');
  await lastReplyIncludes('DONE-7781');
  assert.equal(await page.locator('.message.assistant').last().locator('strong').innerText(), 'through the relay');
  await shot('03-reply');
});

test('a tool permission prompt is answered from the phone', async () => {
  fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Listed the workspace via relay.', chunks: 3 });
  await send('list the workspace');
  const card = page.locator('.permission-card');
  await card.waitFor();
  assert.match(await card.innerText(), /list_directory/);
  await shot('04-permission');
  await card.locator('button[data-decision="allow"]').click();
  await card.waitFor({ state: 'detached' });
  await lastReplyIncludes('Listed the workspace via relay.');
  assert.equal(await page.locator('.tool-card').last().locator('.tool-status').getAttribute('data-status'), 'ok');
  await shot('05-tool-done');
});

test('the permission mode changes from the phone', async () => {
  await page.locator('.mode-select').selectOption('allow');
  await waitFor(() => svc.service.config.current.permission_mode === 'allow', 'permission_mode allow in service.json', WAIT);
  const lan = await TestClient.authed(svc.wsUrl, svc.token);
  assert.equal(((await lan.request({ type: 'get_config' })).data as { permission_mode: string }).permission_mode, 'allow');
  lan.close();
  await shot('06-mode-allow');
});

test('nothing the relay carried holds the chat text or the token', () => {
  const carried = socketFrames.join('\n');
  assert.ok(carried.includes('"e2e":"box"'));
  for (const secret of ['a private question for the relay test', 'DONE-7781', 'list_directory', svc.token, '"type":"auth"']) {
    assert.ok(!carried.includes(secret), `the relay never carried ${secret}`);
  }
});

test('the machine goes away and comes back: the page shows it, then reconnects by itself (new hello + auth)', async () => {
  const dataDir = svc.dataDir;
  await svc.stop();
  await page.locator('.connection[data-state="closed"]').waitFor();
  assert.match(await page.locator('.connection').getAttribute('data-state') ?? '', /closed/);
  await shot('07-computer-offline');
  svc = await startService({}, { dataDir, keepConfig: true, relay: FAST });
  await connected();
  fake.script({ text: 'Back again after the restart.' });
  await send('are you back?');
  await lastReplyIncludes('Back again after the restart.');
  await shot('08-reconnected');
});

test('the page is an installable PWA (manifest with PNG icons, its service worker installed) and raised no errors', async () => {
  const cdp = await context.newCDPSession(page);
  const { installabilityErrors } = (await cdp.send('Page.getInstallabilityErrors')) as { installabilityErrors: { errorId: string }[] };
  // Playwright's contexts are incognito ones; that is the only objection allowed.
  assert.deepEqual(installabilityErrors.map((e) => e.errorId).filter((id) => id !== 'in-incognito'), []);
  const { url, errors } = (await cdp.send('Page.getAppManifest')) as { url: string; errors: unknown[] };
  assert.ok(url.endsWith('/manifest.webmanifest'), 'the page links its manifest');
  assert.deepEqual(errors, []);
  // The relay serves the service worker beside the page (any media file): notifications can be turned on there.
  const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
  assert.equal(scope, `${new URL(page.url()).origin}/`);
  assert.deepEqual(pageErrors, []);
});
