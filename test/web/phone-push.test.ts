/**
 * Notifications on the phone page (docs/protocol.md, "Web Push"), against real parts: the service
 * serving the page (and its service worker) on 127.0.0.1 with the fake OpenAI provider behind it, and
 * Debian's chromium at a phone's size. No push service is reachable here, so a push reaches the
 * installed worker as a synthetic PushEvent, and a tap as a synthetic NotificationEvent
 * (/work/shared/notes/web-push.md's recipe).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page, Worker } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService, type RunningService } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const WAIT = 10_000;

let fake: FakeOpenAI;
let svc: RunningService;
let browser: Browser;
let context: BrowserContext;
let workspace: { dir: string; cleanup: () => Promise<void> };
const pageErrors: string[] = [];

interface Shown {
  title: string;
  body: string;
  tag: string;
  actions: string[];
  data: { url?: string; request_id?: string; conversation_id?: string } | null;
}

before(async () => {
  assert.ok(existsSync(resolve('media/sw.js')), 'media/sw.js is missing: run `node esbuild.mjs` first');
  workspace = await tempDir('ra-push-workspace-');
  fake = await startFakeOpenAI();
  svc = await startService({ base_url: fake.url, model: 'fake-model', workspace: workspace.dir, permission_mode: 'ask' });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  await context.grantPermissions(['notifications'], { origin: svc.httpUrl });
  context.on('page', (page) => {
    page.setDefaultTimeout(WAIT);
    page.on('pageerror', (error) => pageErrors.push(String(error)));
  });
});

after(async () => {
  await browser?.close();
  await svc?.dispose();
  await fake?.close();
  await workspace?.cleanup();
});

/** The page as the service serves it, paired through the fragment (kept in localStorage afterwards). */
async function openPage(query = ''): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${svc.httpUrl}/${query}#url=${encodeURIComponent(svc.wsUrl)}&token=${encodeURIComponent(svc.token)}`);
  await page.locator('.connection[data-state="open"]').waitFor();
  return page;
}

/** The page's installed, active service worker. */
async function installedWorker(page: Page): Promise<Worker> {
  const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
  assert.equal(scope, `${svc.httpUrl}/`, 'the worker controls the page\'s folder');
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
  assert.equal(worker.url(), `${svc.httpUrl}/sw.js`);
  return worker;
}

/** Delivers one push to the worker as the browser would, and returns the notifications then shown. */
function push(worker: Worker, payload: unknown): Promise<Shown[]> {
  return worker.evaluate(async (data) => {
    const scope = self as unknown as ServiceWorkerGlobalScopeLike;
    const event = new (scope as unknown as { PushEvent: new (type: string, init: { data: string }) => Event }).PushEvent('push', { data });
    let pending: Promise<unknown> | undefined;
    // A synthetic event cannot extend its own lifetime: keep the handler's promise instead.
    (event as unknown as { waitUntil: (p: Promise<unknown>) => void }).waitUntil = (p) => void (pending = p);
    scope.dispatchEvent(event);
    await pending;
    const shown = await scope.registration.getNotifications();
    return shown.map((n) => ({ title: n.title, body: n.body, tag: n.tag, actions: (n as unknown as { actions: { action: string; title: string }[] }).actions.map((a) => `${a.action}:${a.title}`), data: n.data }));

    interface ServiceWorkerGlobalScopeLike extends EventTarget {
      registration: ServiceWorkerRegistration;
    }
  }, JSON.stringify(payload));
}

/** Taps the notification of `tag` (on `action`, or its body), as the user would. */
function tap(worker: Worker, tag: string, action = ''): Promise<void> {
  return worker.evaluate(
    async ({ tag, action }) => {
      const scope = self as unknown as EventTarget & { registration: ServiceWorkerRegistration; NotificationEvent: new (type: string, init: { notification: Notification; action: string }) => Event };
      const [notification] = await scope.registration.getNotifications({ tag });
      if (!notification) throw new Error(`no notification tagged ${tag}`);
      const event = new scope.NotificationEvent('notificationclick', { notification, action });
      let pending: Promise<unknown> | undefined;
      (event as unknown as { waitUntil: (p: Promise<unknown>) => void }).waitUntil = (p) => void (pending = p);
      scope.dispatchEvent(event);
      await pending;
    },
    { tag, action },
  );
}

const prompt = (conversation: string, request: string, command: string) => ({
  v: 1,
  kind: 'prompt',
  tag: `prompt:${conversation}`,
  conversation_id: conversation,
  request_id: request,
  title: 'Approve run_command?',
  body: `${command}\nin “Fix the build”`,
  url: `./?conversation=${conversation}&request=${request}`,
});

test('the installed worker shows a prompt with Allow / Deny; a second prompt of the conversation replaces it; a resolved push withdraws it', async () => {
  const page = await openPage();
  const worker = await installedWorker(page);

  const first = await push(worker, prompt('c-1', 'r-1', 'npm test'));
  assert.deepEqual(first, [
    {
      title: 'Approve run_command?',
      body: 'npm test\nin “Fix the build”',
      tag: 'prompt:c-1',
      actions: ['allow:Allow', 'deny:Deny'],
      data: { url: './?conversation=c-1&request=r-1', request_id: 'r-1', conversation_id: 'c-1' },
    },
  ]);
  const second = await push(worker, prompt('c-1', 'r-2', 'git push'));
  assert.equal(second.length, 1, 'the same tag replaces, it does not stack');
  assert.equal(second[0].body, 'git push\nin “Fix the build”');
  assert.equal(second[0].data?.request_id, 'r-2');

  const finished = await push(worker, { v: 1, kind: 'finished', tag: 'run:c-2', conversation_id: 'c-2', title: 'Run finished', body: 'All tests pass.', url: './?conversation=c-2' });
  assert.deepEqual(
    finished.map((n) => [n.tag, n.title, n.actions.length]),
    [
      ['prompt:c-1', 'Approve run_command?', 2],
      ['run:c-2', 'Run finished', 0],
    ],
  );
  const afterResolved = await push(worker, { v: 1, kind: 'resolved', tag: 'prompt:c-1', conversation_id: 'c-1', request_id: 'r-2' });
  assert.deepEqual(afterResolved.map((n) => n.tag), ['run:c-2'], 'the prompt is withdrawn, nothing new is shown');
  await tap(worker, 'run:c-2');
  await page.close();
});

test('a content-blind device shows only the generic text, with no Allow / Deny, and opens the conversation from the ids', async () => {
  const page = await openPage();
  const worker = await installedWorker(page);
  const shown = await push(worker, { v: 1, kind: 'prompt', tag: 'prompt:c-9', blind: true, conversation_id: 'c-9', request_id: 'r-9' });
  const blind = shown.find((n) => n.tag === 'prompt:c-9');
  assert.deepEqual(blind, {
    title: 'Remote Assistant needs you',
    body: 'Open to see the details.',
    tag: 'prompt:c-9',
    actions: [],
    data: { url: './?conversation=c-9&request=r-9', request_id: 'r-9', conversation_id: 'c-9' },
  });
  const run = (await push(worker, { v: 1, kind: 'failed', tag: 'run:c-9', blind: true, conversation_id: 'c-9' })).find((n) => n.tag === 'run:c-9');
  assert.equal(run?.title, 'Remote Assistant: a run finished');
  assert.ok(!JSON.stringify(run).includes('undefined'));
  await push(worker, { v: 1, kind: 'resolved', tag: 'prompt:c-9' });
  await tap(worker, 'run:c-9');
  await page.close();
});

test('Allow tapped on a prompt while no page is open: the worker opens the page, which answers through the service once authenticated, and the tool runs', async () => {
  const page = await openPage();
  const worker = await installedWorker(page);
  // A chat from a script on the LAN asks to run a tool; the phone is told by push.
  fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Listed.', chunks: 1 });
  const script = await TestClient.authed(svc.wsUrl, svc.token);
  const asked = script.next((f) => f.event === 'permission.request');
  const chat = script.request({ type: 'chat', message: 'list the workspace' });
  const request = (await asked) as { request_id: string; conversation_id: string };
  await push(worker, { ...prompt(request.conversation_id, request.request_id, 'list_directory'), title: 'Approve list_directory?' });
  await page.close();

  // Chromium lets only a real tap open a window (a synthetic event is refused): the test stands in for
  // the browser there, opening the URL the worker asked for.
  await worker.evaluate(() => {
    const scope = self as unknown as { clients: { openWindow: (url: string) => Promise<null> }; opened?: string };
    scope.clients.openWindow = async (url) => {
      scope.opened = url;
      return null;
    };
  });
  await tap(worker, `prompt:${request.conversation_id}`, 'allow');
  const target = await worker.evaluate(() => (self as unknown as { opened?: string }).opened);
  assert.equal(target, `${svc.httpUrl}/?conversation=${request.conversation_id}&request=${request.request_id}&answer=allow`);
  const answering = await context.newPage();
  await answering.goto(target);
  const reply = await chat;
  assert.equal(reply.status, 'ok');
  assert.equal((reply.data as { response: string }).response, 'Listed.');
  // The provider saw the tool's result: the tool ran, it was not denied.
  const toolMessage = fake.requests.at(-1)?.body as { messages: { role: string; content: string }[] };
  const result = toolMessage.messages.find((m) => m.role === 'tool');
  assert.ok(result && !/denied/i.test(result.content), `the tool ran: ${result?.content}`);
  // The page shows that conversation, and the answer is gone from the address bar (a reload answers nothing).
  await answering.waitForFunction(() => !location.search);
  await answering.locator('.message.user', { hasText: 'list the workspace' }).waitFor();
  assert.deepEqual(await worker.evaluate(async () => (await (self as unknown as { registration: ServiceWorkerRegistration }).registration.getNotifications()).length), 0);
  script.close();
  await answering.close();
});

test('a tap while the page is open: the worker hands it the target, and the page shows that conversation', async () => {
  const script = await TestClient.authed(svc.wsUrl, svc.token);
  const answer = await script.request({ type: 'chat', message: 'a conversation to open from a notification' });
  const conversation = (answer.data as { conversation_id: string }).conversation_id;
  const page = await openPage();
  const worker = await installedWorker(page);
  await push(worker, { v: 1, kind: 'finished', tag: `run:${conversation}`, conversation_id: conversation, title: 'Run finished', body: 'echo', url: `./?conversation=${conversation}` });
  await tap(worker, `run:${conversation}`);
  await page.locator('.message.user', { hasText: 'a conversation to open from a notification' }).waitFor();
  assert.match(await page.locator('.title').innerText(), /a conversation to open from a notification/);
  assert.equal(context.pages().length, 1, 'no second page opened');
  script.close();
  await page.close();
  assert.deepEqual(pageErrors, []);
});
