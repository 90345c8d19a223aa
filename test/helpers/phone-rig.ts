/**
 * The phone page against real parts, for the page's browser tests: the service in process with the fake
 * OpenAI provider over a temp workspace, media/ served by a static server, and Debian's chromium
 * (playwright-core). `openPhone` gives a phone with a fresh browser profile at a phone's size, paired
 * through the URL fragment and connected, recording page errors and every frame the page sent.
 * Runs after `node esbuild.mjs` (npm test), which writes media/chat-phone.js.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page, WebSocketRoute } from 'playwright-core';
import { MAX_UNSENT_ATTACHMENTS } from '../../src/protocol';
import { uploadAttachment } from './attachments';
import { launchChromium, serveStatic, type StaticServer } from './browser';
import { startFakeOpenAI, type FakeOpenAI, type FakeStep } from './fake-openai';
import { startService, type RunningService } from './service';
import { tempDir } from './temp';
import { TestClient } from './ws-client';

const MEDIA = resolve('media');
export const PAGE_WAIT = 10_000;

export interface PhonePage {
  page: Page;
  context: BrowserContext;
  errors: string[];
  /** Every frame the page sent to the service, parsed. */
  sent: Record<string, unknown>[];
  close(): Promise<void>;
}

export interface PhoneRig {
  fake: FakeOpenAI;
  svc: RunningService;
  site: StaticServer;
  browser: Browser;
  workspace: { dir: string; cleanup: () => Promise<void> };
  /**
   * A phone paired with the service; `beforeGoto` may route its socket before the page loads. `credential`
   * is the pairing fragment's part after the URL (default: the access token; `token=<session token>` for a
   * password user, `pair=<one-time secret>` for a paired device).
   */
  openPhone(beforeGoto?: (page: Page) => Promise<void>, credential?: string): Promise<PhonePage>;
  /** The editor's chat view: the webview bundle, with acquireVsCodeApi standing in for the editor (frames go to the real service over a socket). */
  openEditorView(viewport?: { width: number; height: number }, colorScheme?: 'light' | 'dark'): Promise<EditorView>;
  close(): Promise<void>;
}

export interface EditorView {
  page: Page;
  /** The host actions the view asked for (showDiff, ...). */
  actions: { action: string; argument?: string }[];
  close(): Promise<void>;
}

/** What the page keeps for its (only) machine under `key` (each paired machine has its own prefix: src/web/machines/machine-store.ts). */
export function machineItem(page: Page, key: string): Promise<string | null> {
  return page.evaluate((wanted) => {
    const stored = Object.keys(localStorage).find((k) => k.startsWith('remote-assistant.machine/') && k.endsWith(`/${wanted}`));
    return stored ? localStorage.getItem(stored) : null;
  }, key);
}

export async function startPhoneRig(config: Record<string, unknown> = {}): Promise<PhoneRig> {
  assert.ok(existsSync(join(MEDIA, 'chat-phone.js')), 'media/chat-phone.js is missing: run `node esbuild.mjs` first');
  const workspace = await tempDir('ra-phone-workspace-');
  const fake = await startFakeOpenAI();
  const svc = await startService({ base_url: fake.url, model: 'fake-model', workspace: workspace.dir, ...config });
  const site = await serveStatic(MEDIA);
  const browser = await launchChromium();
  return {
    fake,
    svc,
    site,
    browser,
    workspace,
    async openPhone(beforeGoto, credential = `token=${encodeURIComponent(svc.token)}`) {
      const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
      const page = await context.newPage();
      page.setDefaultTimeout(PAGE_WAIT);
      const errors: string[] = [];
      const sent: Record<string, unknown>[] = [];
      page.on('pageerror', (error) => errors.push(String(error)));
      page.on('websocket', (socket) => socket.on('framesent', (frame) => sent.push(JSON.parse(String(frame.payload)) as Record<string, unknown>)));
      await beforeGoto?.(page);
      await page.goto(`${site.url}/phone.html#url=${encodeURIComponent(svc.wsUrl)}&${credential}`);
      await page.locator('.connection[data-state="open"]').waitFor();
      return { page, context, errors, sent, close: () => context.close() };
    },
    async openEditorView(viewport = { width: 390, height: 844 }, colorScheme = 'light') {
      const service = await TestClient.authed(svc.wsUrl, svc.token);
      const context = await browser.newContext({ viewport, colorScheme });
      const page = await context.newPage();
      page.setDefaultTimeout(PAGE_WAIT);
      const actions: EditorView['actions'] = [];
      await page.exposeFunction('toHost', async (message: { kind: string; frame?: Record<string, unknown>; action?: string; argument?: string }) => {
        if (message.kind === 'ready') await page.evaluate(() => window.postMessage({ kind: 'state', state: 'running' }, '*'));
        if (message.kind === 'action') actions.push({ action: message.action!, argument: message.argument });
        if (message.kind === 'frame') {
          const envelope = await service.request(message.frame!);
          await page.evaluate((e) => window.postMessage({ kind: 'response', envelope: e }, '*'), envelope);
        }
      });
      service.socket.on('message', (data) => {
        const frame = JSON.parse(data.toString()) as { event?: string };
        if (frame.event) void page.evaluate((e) => window.postMessage({ kind: 'event', event: e }, '*'), frame).catch(() => undefined);
      });
      // A string: tsx's __name helper would not exist in the page.
      await page.addInitScript('window.acquireVsCodeApi = () => ({ postMessage: (m) => void window.toHost(m), getState: () => undefined, setState: () => undefined });');
      await page.goto(`${site.url}/phone.html`);
      await page.setContent(
        `<!doctype html><html><head><link rel="stylesheet" href="${site.url}/chat.css"></head><body class="in-editor"><div id="app"></div><script src="${site.url}/chat-webview.js"></script></body></html>`,
      );
      await page.locator('.connection[data-state="open"]').waitFor();
      return {
        page,
        actions,
        async close() {
          service.close();
          await context.close();
        },
      };
    },
    async close() {
      await browser.close();
      await site.close();
      await svc.dispose();
      await fake.close();
      await workspace.cleanup();
    },
  };
}

/** Types `text` into the page's message box and sends it (Enter), as a person does. */
export async function sendMessage(page: Page, text: string): Promise<void> {
  const input = page.locator('.composer-input');
  await input.fill(text);
  await input.press('Enter');
}

/** Starts a conversation on the page (the fake answers `answer`) and answers its id, as the page keeps it. */
export async function startConversation(rig: PhoneRig, page: Page, text: string, answer = 'First answer.'): Promise<string> {
  rig.fake.script({ text: answer, chunks: 1 });
  await sendMessage(page, text);
  await page.locator('.machine-view:not([hidden]) .message.assistant', { hasText: answer }).waitFor();
  const conversationId = await machineItem(page, 'remote-assistant.conversation');
  assert.ok(conversationId, 'the page keeps the conversation it shows');
  return conversationId;
}

/** Reloads the page and waits until its machine's view is connected again. */
export async function reloadPhone(page: Page): Promise<void> {
  await page.reload();
  await page.locator('.machine-view:not([hidden]) .connection[data-state="open"]').waitFor();
}

/**
 * The page's outbox (its only machine's) holds `items` when it next starts: as if they were sent offline before a
 * reload. The machine's prefix is read from a key the page keeps there (its conversation, or the message box once typed in).
 */
export async function queueForReload(page: Page, items: Record<string, unknown>[]): Promise<void> {
  await page.evaluate((value) => {
    const kept = /\/remote-assistant\.(conversation|box)$/;
    const key = Object.keys(localStorage).find((k) => k.startsWith('remote-assistant.machine/') && kept.test(k))!;
    localStorage.setItem(key.replace(kept, '/remote-assistant.outbox'), value);
  }, JSON.stringify(items));
}

/** Waits (at most 10 s) until `done`, as seen by the test (frames a routed phone kept back, say). */
export async function waitUntil(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(done(), `waited 10 s for ${what}`);
}

/** A user message as the computer stored it, with what it carries. */
export interface StoredUserMessage {
  content: string;
  client_message_id?: string;
  attachments?: { attachment_id: string; name: string }[];
  context?: { path: string }[];
}

/** The user messages stored in the conversation the page shows, in order (asked of the computer, as the owner). */
export async function storedUserMessages(rig: PhoneRig, page: Page): Promise<StoredUserMessage[]> {
  const conversationId = await machineItem(page, 'remote-assistant.conversation');
  assert.ok(conversationId, 'the page shows a conversation');
  const client = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const answer = await client.request({ type: 'get_messages', conversation_id: conversationId });
  client.close();
  return (answer.data as { messages: (StoredUserMessage & { role: string })[] }).messages.filter((m) => m.role === 'user');
}

/** The same person finishes 20 uploads elsewhere (MAX_UNSENT_ATTACHMENTS): the computer lets the unsent upload `attachmentId` go. */
export async function pushOutUpload(rig: PhoneRig, attachmentId: string): Promise<void> {
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  for (let i = 0; i < MAX_UNSENT_ATTACHMENTS; i++) {
    const done = await uploadAttachment((frame) => other.request(frame), Buffer.from(`other ${i} ${randomUUID()}`), `other-${i}.txt`, 'text/plain');
    assert.equal(done.status, 'ok');
  }
  assert.equal((await other.request({ type: 'get_attachment', attachment_id: attachmentId })).code, 'not_found', 'the computer let the upload go');
  other.close();
}

/** The ids of the uploads the page finished, in order (the attachment_end frames it sent name them). */
export function pageUploads(phone: PhonePage): string[] {
  return phone.sent.filter((f) => f.type === 'attachment_end').map((f) => (f as { attachment_id: string }).attachment_id);
}

/** Attaches a text file holding `words` through the page's file input; the id of its upload once its chip is ready. */
export async function attachTextFile(phone: PhonePage, name: string, words: string): Promise<string> {
  const shown = '.machine-view:not([hidden])';
  const before = pageUploads(phone).length;
  await phone.page.locator(`${shown} .attach-input`).setInputFiles({ name, mimeType: 'text/plain', buffer: Buffer.from(`${words}\n`) });
  await phone.page.locator(`${shown} .attachment-chip[data-state="ready"]`).waitFor();
  return pageUploads(phone)[before];
}

/** What a routed phone's socket passes on (routedPhone). */
export interface RoutedFrames {
  /** Page-to-computer frames it answers true for are kept back (in `held`) until `release`. */
  hold?: (frame: string) => boolean;
  held: string[];
  /** Sees each computer-to-page frame first; true: it took care of it (not passed on). */
  onAnswer?: (frame: string, route: WebSocketRoute, server: WebSocketRoute) => boolean;
  release(): void;
}

/** A phone whose socket runs through a route the test drives (`frames`): frames kept back, answers seen first, the connection cut. */
export async function routedPhone(rig: PhoneRig): Promise<{
  phone: PhonePage;
  frames: RoutedFrames;
}> {
  let server: WebSocketRoute | undefined;
  const frames: RoutedFrames = {
    held: [],
    release() {
      for (const frame of frames.held.splice(0)) server?.send(frame);
    },
  };
  const phone = await rig.openPhone(async (page) => {
    await page.routeWebSocket(/./, (socket) => {
      const to = socket.connectToServer();
      server = to;
      socket.onMessage((frame) => {
        if (frames.hold?.(String(frame))) frames.held.push(String(frame));
        else to.send(frame);
      });
      to.onMessage((frame) => {
        if (!frames.onAnswer?.(String(frame), socket, to)) socket.send(frame);
      });
    });
  });
  return { phone, frames };
}

/**
 * A conversation started on the page whose next turn the fake holds open after its first chunk until `open()`
 * (the answers after it: `then`): messages sent meanwhile wait in its queue.
 */
export async function busyConversation(rig: PhoneRig, page: Page, ...then: FakeStep[]): Promise<{ conversationId: string; open: () => void }> {
  const conversationId = await startConversation(rig, page, 'A conversation that will be busy');
  let open = (): void => undefined;
  const held = new Promise((resolve) => (open = () => resolve(undefined)));
  rig.fake.script({ text: 'a long answer in two chunks', chunks: 2, holdAfterChunks: { chunks: 1, until: held } }, ...then);
  return { conversationId, open };
}
