/**
 * The phone page through the relay, in Debian's chromium at a phone's size: the real Node relay serving
 * the page (media/) and relaying to the real service (fake OpenAI provider). Pair from the fragment URL
 * of create_pairing, chat with streaming, approve a tool prompt, change the permission mode, follow a
 * conversation beside a LAN client through a drop mid-stream (issue 12's test), ride out a machine restart. Runs after `node esbuild.mjs` (npm test). Screenshots: test-artifacts/phone-relay/.
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
  // Asked in words (src/protocol/tool-words.ts), not by the tool's name.
  assert.match(await card.innerText(), /List the workspace folder\?/);
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

type Frame = Record<string, unknown>;

/**
 * A conversation's transcript as a client draws it from the events it received (the editor's view
 * does): user messages, tool cards with their outcome, replies made of their pieces.
 */
function transcriptOfEvents(frames: Frame[], conversationId: string): string[] {
  const lines: string[] = [];
  let tools: { index: number; tool: string }[] = [];
  let reply: number | undefined;
  for (const f of frames.filter((frame) => frame.conversation_id === conversationId)) {
    const message = f.message as { role: string; content: string } | undefined;
    if (f.event === 'chat.message' && message?.role === 'user') {
      lines.push(`user: ${message.content}`);
      reply = undefined;
    } else if (f.event === 'tool.call') {
      tools.push({ index: lines.push(`tool: ${String(f.tool)} running…`) - 1, tool: String(f.tool) });
      reply = undefined;
    } else if (f.event === 'tool.result') {
      const card = tools.find((t) => t.tool === f.tool);
      tools = tools.filter((t) => t !== card);
      if (card) lines[card.index] = `tool: ${String(f.tool)} ${f.ok ? 'ok' : f.denied ? 'denied' : 'failed'}`;
    } else if (f.event === 'chat.delta') {
      if (reply === undefined) reply = lines.push('assistant: ') - 1;
      lines[reply] += String(f.delta);
    } else if (f.event === 'chat.message' && message?.role === 'assistant') {
      if (reply === undefined) lines.push(`assistant: ${message.content}`);
      else assert.equal(lines[reply], `assistant: ${message.content}`, 'the pieces make the stored reply');
      reply = undefined;
    }
  }
  return lines;
}

/** The page's transcript as rendered: each bubble's text, each tool card's name and status (notes left out). */
function renderedTranscript(phone: Page): Promise<string[]> {
  return phone.locator('.message-list > .message, .message-list > .tool-card').evaluateAll((nodes) =>
    nodes.map((n) => {
      const node = n as HTMLElement;
      if (node.classList.contains('tool-card')) return `tool: ${node.dataset.tool} ${node.querySelector('.tool-status')?.textContent ?? ''}`;
      const text = (node.querySelector('.plain, .markdown') as HTMLElement | null)?.innerText.trim() ?? '';
      return `${node.classList.contains('user') ? 'user' : 'assistant'}: ${text}`;
    }),
  );
}

test("two clients on one conversation, the editor's view on the LAN and a phone through the relay, show the same streamed reply and tool cards; the phone drops mid-stream and ends with the same transcript, no piece twice", async () => {
  const lan = await TestClient.authed(svc.wsUrl, svc.token);
  const pairingInfo = (await lan.request({ type: 'create_pairing' })).data as { pairing_url: string };
  const phoneContext = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  const phone = await phoneContext.newPage();
  phone.setDefaultTimeout(WAIT);
  const errors: string[] = [];
  phone.on('pageerror', (error) => errors.push(String(error)));
  // The phone's socket to the relay passes through a route the test can cut, as a lost network would.
  let cut: (() => void) | undefined;
  await phone.routeWebSocket(/\/ws\?machine_id=/, (ws) => {
    const server = ws.connectToServer();
    cut = () => {
      server.close({ code: 1000, reason: 'network lost' });
      ws.close({ code: 4000, reason: 'network lost' });
    };
  });
  try {
    const first = await lan.request({ type: 'chat', message: 'a task started in the editor' });
    assert.equal(first.status, 'ok', JSON.stringify(first));
    const conversationId = (first.data as { conversation_id: string }).conversation_id;
    await phone.goto(pairingInfo.pairing_url);
    await phone.locator('.connection[data-state="open"]').waitFor();
    await phone.locator('.drawer-toggle').click();
    await phone.locator('.conversation-open', { hasText: 'a task started in the editor' }).click();
    await phone.waitForFunction(() => (document.querySelector('.message-list')?.textContent ?? '').includes('echo: a task started in the editor'));
    // Every text the streaming reply ever shows is recorded: a piece drawn twice would break the prefix.
    await phone.evaluate(() => {
      const seen: string[] = ((window as unknown as { __seen: string[] }).__seen = []);
      new MutationObserver(() => {
        const streaming = document.querySelector('.message.assistant.streaming .markdown') as HTMLElement | null;
        if (streaming) seen.push(streaming.innerText.trim());
      }).observe(document.querySelector('.message-list')!, { childList: true, subtree: true, characterData: true });
    });

    const reply = Array.from({ length: 60 }, (_, i) => `step${i}`).join(' ');
    fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: reply, chunks: 60, chunkDelayMs: 80 });
    const answer = lan.request({ type: 'chat', conversation_id: conversationId, message: 'continue it on the phone', stream: true }, 30_000);
    // Live on both: the tool card, then the reply's pieces, while the turn still runs.
    await phone.locator('.tool-card[data-tool="list_directory"] .tool-status[data-status="ok"]').waitFor();
    await phone.waitForFunction(() => / step5\b/.test(document.querySelector('.message.assistant.streaming')?.textContent ?? ''));
    assert.ok(
      lan.frames.some((f) => f.event === 'tool.call' && f.conversation_id === conversationId),
      'the LAN client saw the tool card',
    );
    assert.ok(
      !lan.frames.some(
        (f) => f.event === 'turn.ended' && f.conversation_id === conversationId && f.outcome === 'answered' && lan.frames.indexOf(f) > lan.frames.findIndex((g) => g.event === 'tool.call'),
      ),
      'still running',
    );

    // The phone's connection drops mid-stream; it reconnects by itself (hello, auth, follow after its last seq).
    cut!();
    await phone.locator('.connection:not([data-state="open"])').waitFor();
    const shownAtDrop = (await phone.locator('.message.assistant').last().locator('.markdown').innerText()).trim();
    await phone.locator('.connection[data-state="open"]').waitFor({ timeout: 20_000 });
    assert.equal(((await answer).data as { response: string }).response, reply);
    await lan.next(
      (f) =>
        f.event === 'turn.ended' &&
        f.conversation_id === conversationId &&
        typeof f.seq === 'number' &&
        f.outcome === 'answered' &&
        lan.frames.indexOf(f) > lan.frames.findIndex((g) => g.event === 'tool.call'),
    );
    // The reply's text (its bubble also holds the usage line under it).
    await phone.waitForFunction(
      (text) => (document.querySelector('.message.assistant:last-of-type .markdown')?.textContent ?? '').trim() === text && !document.querySelector('.message.streaming'),
      reply,
    );
    assert.ok(reply.startsWith(shownAtDrop) && shownAtDrop !== reply, 'the drop happened mid-stream');

    const lanTranscript = transcriptOfEvents(lan.frames, conversationId);
    assert.deepEqual(lanTranscript, [
      'user: a task started in the editor',
      'assistant: echo: a task started in the editor',
      'user: continue it on the phone',
      'tool: list_directory ok',
      `assistant: ${reply}`,
    ]);
    assert.deepEqual(await renderedTranscript(phone), lanTranscript, "the phone's transcript ends identical to the editor's");
    const seen = await phone.evaluate(() => (window as unknown as { __seen: string[] }).__seen);
    assert.ok(seen.length > 0);
    assert.deepEqual(
      seen.filter((text) => !reply.startsWith(text)),
      [],
      'every text the reply showed was a prefix of it: no piece twice',
    );
    assert.deepEqual(errors, []);
  } finally {
    lan.close();
    await phoneContext.close();
  }
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
  assert.match((await page.locator('.connection').getAttribute('data-state')) ?? '', /closed/);
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
  assert.deepEqual(
    installabilityErrors.map((e) => e.errorId).filter((id) => id !== 'in-incognito'),
    [],
  );
  const { url, errors } = (await cdp.send('Page.getAppManifest')) as { url: string; errors: unknown[] };
  assert.ok(url.endsWith('/manifest.webmanifest'), 'the page links its manifest');
  assert.deepEqual(errors, []);
  // The relay serves the service worker beside the page (any media file): notifications can be turned on there.
  const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
  assert.equal(scope, `${new URL(page.url()).origin}/`);
  assert.deepEqual(pageErrors, []);
});
