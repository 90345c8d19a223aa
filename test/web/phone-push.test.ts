/**
 * Notifications on the phone page (docs/protocol.md, "Web Push"), against real parts: the service
 * serving the page (and its service worker) on 127.0.0.1 with the fake OpenAI provider behind it, and
 * Debian's chromium at a phone's size. No push service is reachable here, so a push reaches the
 * installed worker as a synthetic PushEvent, and a tap as a synthetic NotificationEvent
 * (/work/shared/notes/web-push.md's recipe). The page talks to the service through
 * test/helpers/recording-proxy.ts, which records each command it sent and the service's answer.
 */
import assert from 'node:assert/strict';
import { createECDH, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page, type Worker } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH, launchChromium } from '../helpers/browser';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService, type RunningService } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { gitRepository } from '../helpers/git-repo';
import { reviewPayload } from '../../src/channels/push/push-payloads';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy';
import { TestClient } from '../helpers/ws-client';

const WAIT = 10_000;
const ARTIFACTS = resolve('test-artifacts/web');

let fake: FakeOpenAI;
let svc: RunningService;
let browser: Browser;
let context: BrowserContext;
let workspace: { dir: string; cleanup: () => Promise<void> };
/** The page's way to the service, recording its commands (test/helpers/recording-proxy.ts). */
let pushCommands: RecordingProxy;
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
  await mkdir(ARTIFACTS, { recursive: true });
  workspace = await tempDir('ra-push-workspace-');
  // A git repository, so a conversation may have its own worktree (a "ready for review" tap).
  await gitRepository(workspace.dir, { 'README.md': 'the workspace\n' });
  fake = await startFakeOpenAI();
  svc = await startService({ base_url: fake.url, model: 'fake-model', workspace: workspace.dir, permission_mode: 'ask' });
  pushCommands = await startRecordingProxy(svc.wsUrl);
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
  await pushCommands?.close();
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
  assert.equal(scope, `${svc.httpUrl}/`, "the worker controls the page's folder");
  const owner = page.context();
  const worker = owner.serviceWorkers()[0] ?? (await owner.waitForEvent('serviceworker'));
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
    return shown.map((n) => ({
      title: n.title,
      body: n.body,
      tag: n.tag,
      actions: (n as unknown as { actions: { action: string; title: string }[] }).actions.map((a) => `${a.action}:${a.title}`),
      data: n.data,
    }));

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

/**
 * Chromium lets only a real tap open a window (a synthetic event is refused): the test stands in for the
 * browser there, keeping the URL the worker asked for (openedWindow), which the test then opens itself.
 */
async function standInForOpenWindow(worker: Worker): Promise<void> {
  await worker.evaluate(() => {
    const scope = self as unknown as { clients: { openWindow: (url: string) => Promise<null> }; opened?: string };
    scope.clients.openWindow = async (url) => {
      scope.opened = url;
      return null;
    };
  });
}

function openedWindow(worker: Worker): Promise<string | undefined> {
  return worker.evaluate(() => (self as unknown as { opened?: string }).opened);
}

const prompt = (conversation: string, request: string, command: string) => ({
  v: 1,
  kind: 'prompt',
  tag: `prompt:${conversation}`,
  conversation_id: conversation,
  request_id: request,
  // As the service words a prompt since s27: the question says the command, the body what it does not.
  title: `Run ${command}?`,
  body: 'Fix the build',
  url: `./?conversation=${conversation}&request=${request}`,
});

/** A chat that waits for a person's answer to its prompt, given through browser pages meanwhile (10 s, the default, was too short under a full run's load). */
const CHAT_WAITS_MS = 60_000;

test('the installed worker shows a prompt with Allow / Deny; a second prompt of the conversation replaces it; a resolved push withdraws it', async () => {
  const page = await openPage();
  const worker = await installedWorker(page);

  const first = await push(worker, prompt('c-1', 'r-1', 'npm test'));
  assert.deepEqual(first, [
    {
      title: 'Run npm test?',
      body: 'Fix the build',
      tag: 'prompt:c-1',
      actions: ['allow:Allow', 'deny:Deny'],
      data: { url: './?conversation=c-1&request=r-1', request_id: 'r-1', conversation_id: 'c-1' },
    },
  ]);
  const second = await push(worker, prompt('c-1', 'r-2', 'git push'));
  assert.equal(second.length, 1, 'the same tag replaces, it does not stack');
  assert.equal(second[0].title, 'Run git push?');
  assert.equal(second[0].data?.request_id, 'r-2');

  const finished = await push(worker, { v: 1, kind: 'finished', tag: 'run:c-2', conversation_id: 'c-2', title: 'Run finished', body: 'All tests pass.', url: './?conversation=c-2' });
  assert.deepEqual(
    finished.map((n) => [n.tag, n.title, n.actions.length]),
    [
      ['prompt:c-1', 'Run git push?', 2],
      ['run:c-2', 'Run finished', 0],
    ],
  );
  const afterResolved = await push(worker, { v: 1, kind: 'resolved', tag: 'prompt:c-1', conversation_id: 'c-1', request_id: 'r-2' });
  assert.deepEqual(
    afterResolved.map((n) => n.tag),
    ['run:c-2'],
    'the prompt is withdrawn, nothing new is shown',
  );
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
  const chat = script.request({ type: 'chat', message: 'list the workspace' }, CHAT_WAITS_MS);
  const request = (await asked) as { request_id: string; conversation_id: string };
  await push(worker, { ...prompt(request.conversation_id, request.request_id, 'list_directory'), title: 'Approve list_directory?' });
  await page.close();

  await standInForOpenWindow(worker);
  await tap(worker, `prompt:${request.conversation_id}`, 'allow');
  const target = await openedWindow(worker);
  assert.ok(target, 'the worker opened a page');
  const opened = new URL(target);
  assert.equal(`${opened.origin}${opened.pathname}`, `${svc.httpUrl}/`);
  assert.deepEqual([...opened.searchParams.keys()], ['conversation', 'request', 'answer', 'tap']);
  assert.deepEqual([opened.searchParams.get('conversation'), opened.searchParams.get('request'), opened.searchParams.get('answer')], [request.conversation_id, request.request_id, 'allow']);
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
  await answering.close();
  // The same URL again (from the history): its proof of a tap is spent, it answers nothing.
  const again = await context.newPage();
  await again.goto(target);
  await again.locator('.deep-link-notice').waitFor({ state: 'visible' });
  assert.equal(await again.locator('.deep-link-notice').innerText(), 'A link cannot answer for you: choose on the prompt.');
  script.close();
  await again.close();
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

test('a "ready for review" tap opens the conversation\'s Changes sheet: on the open page, and from a content-blind one with no page open', async () => {
  // A conversation in its own worktree that changed a file (the workspace is a git repository).
  fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'review-me.txt', content: 'by the assistant\n' } }] }, { text: 'Wrote it.', chunks: 1 });
  const script = await TestClient.authed(svc.wsUrl, svc.token);
  const asked = script.next((f) => f.event === 'permission.request', 30_000);
  const chat = script.request({ type: 'chat', message: 'a change to review', worktree: true }, 60_000);
  const request = (await asked) as { request_id: string };
  await script.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow' });
  const answer = await chat;
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  const conversation = (answer.data as { conversation_id: string }).conversation_id;
  const ready = { conversationId: conversation, conversationTitle: 'a change to review', files: 1, additions: 1, deletions: 0 };
  const file = '.changes-panel .change-file[data-path="review-me.txt"]';

  const page = await openPage();
  const worker = await installedWorker(page);
  /** The review notification shown for a push of the service's own payload (content-blind or not): it links to the Changes view. */
  const pushReview = async (blind: boolean) => {
    const shown = (
      await push(
        worker,
        reviewPayload(ready, blind, (text) => text),
      )
    ).find((n) => n.tag === `review:${conversation}`);
    assert.equal(shown?.data?.url, `./?conversation=${conversation}&view=changes`);
  };
  await pushReview(false);
  await tap(worker, `review:${conversation}`);
  await page.locator(file).waitFor();
  assert.match(await page.locator('.title').innerText(), /a change to review/);
  await page.close();

  // Content-blind (only the ids), tapped with no page open: the page the worker opens shows the sheet once connected.
  await pushReview(true);
  await standInForOpenWindow(worker);
  await tap(worker, `review:${conversation}`);
  const target = await openedWindow(worker);
  assert.ok(target, 'the worker opened a page');
  const opened = await context.newPage();
  await opened.goto(target);
  await opened.locator(file).waitFor();
  await opened.waitForFunction(() => !location.search);
  script.close();
  await opened.close();
  assert.deepEqual(pageErrors, []);
});

// ---- the Notifications section and client_state (through the push commands) ----------------------

const ANDROID_CHROME = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Mobile Safari/537.36';
const IPHONE_SAFARI = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';

/** A phone's browser context (its own storage), notifications granted unless told otherwise. */
async function phoneContext(options: { userAgent?: string; grant?: boolean; browser?: Browser } = {}): Promise<BrowserContext> {
  const phone = await (options.browser ?? browser).newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, userAgent: options.userAgent ?? ANDROID_CHROME });
  if (options.grant !== false) await phone.grantPermissions(['notifications'], { origin: svc.httpUrl });
  phone.on('page', (page) => {
    page.setDefaultTimeout(WAIT);
    page.on('pageerror', (error) => pageErrors.push(String(error)));
  });
  return phone;
}

/** The page paired with the proxy's address, at `origin` (the service's own by default). */
async function openPhonePage(phone: BrowserContext, origin = svc.httpUrl, prepare?: (page: Page) => Promise<unknown>): Promise<Page> {
  const page = await phone.newPage();
  await prepare?.(page);
  await page.goto(`${origin}/#url=${encodeURIComponent(pushCommands.wsUrl)}&token=${encodeURIComponent(svc.token)}`);
  await page.locator('.connection[data-state="open"]').waitFor();
  return page;
}

async function openNotifications(page: Page): Promise<void> {
  await page.locator('.drawer-toggle').click();
  await page.locator('.open-notifications').click();
  await page.locator('.push-dialog').waitFor({ state: 'visible' });
}

async function listDevices(): Promise<{ device_id: string; device_name: string; endpoint_origin: string; events: Record<string, boolean>; content_blind: boolean }[]> {
  const client = await TestClient.authed(pushCommands.wsUrl, svc.token);
  const answer = await client.request({ type: 'list_push_devices' });
  client.close();
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  return (answer.data as { devices: [] }).devices;
}

/**
 * The browser's side of a push subscription, replacing PushManager's subscribe and getSubscription: no
 * vendor push service here, so subscribe returns a subscription with `subscription`'s keys, made as a
 * browser makes them (docs: /work/shared/notes/web-push.md).
 */
function subscriptionStub(subscription: { endpoint: string; p256dh: string; auth: string }): string {
  // A string: the test's compiler would wrap a function's inner arrows in a helper the page does not have.
  // The browser's side kept in sessionStorage, so it outlives a reload as a real subscription does.
  return `(() => {
    const sub = ${JSON.stringify(subscription)};
    const load = () => JSON.parse(sessionStorage.getItem('__push') || 'null') || { subscribed: false, endpoint: sub.endpoint };
    const save = (state) => sessionStorage.setItem('__push', JSON.stringify(state));
    const bytes = (text) => Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
    const made = (state) => ({
      endpoint: state.endpoint,
      options: { applicationServerKey: state.key ? bytes(state.key).buffer : null, userVisibleOnly: true },
      toJSON() { return { endpoint: state.endpoint, expirationTime: null, keys: { p256dh: sub.p256dh, auth: sub.auth } }; },
      async unsubscribe() { save({ ...load(), subscribed: false }); return true; },
    });
    PushManager.prototype.subscribe = async function (options) {
      const key = btoa(String.fromCharCode(...new Uint8Array(options.applicationServerKey))).replace(/[+]/g, '-').replace(/[/]/g, '_').replace(/=+$/, '');
      const state = { ...load(), key, subscribed: options.userVisibleOnly === true };
      save(state);
      return made(state);
    };
    PushManager.prototype.getSubscription = async function () {
      const state = load();
      return state.subscribed ? made(state) : null;
    };
  })();`;
}

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + WAIT;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test("turning notifications on subscribes with the service's VAPID key and registers the subscription; choices and the name reach the service; turning off removes it", async () => {
  // No vendor push service here: only the browser's subscribe is replaced, by one returning a subscription
  // with keys made as a browser makes them (docs: /work/shared/notes/web-push.md).
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const browserSubscription = { endpoint: 'https://push.example.test/send/device-1', p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
  const phone = await phoneContext();
  const stub = subscriptionStub(browserSubscription);
  const browserSide = () => page.evaluate(() => JSON.parse(sessionStorage.getItem('__push') ?? 'null') as { key?: string; subscribed: boolean; endpoint: string } | null);
  const page = await openPhonePage(phone, svc.httpUrl, (p) => p.addInitScript({ content: stub }));
  await openNotifications(page);
  assert.match(await page.locator('.push-status').innerText(), /Off on this device/);
  assert.equal(await page.locator('.push-device-name').inputValue(), 'Android Chrome', 'named after the browser by default');
  await page.locator('.push-device-name').fill('Pixel of the test');
  await page.locator('.push-device-name').dispatchEvent('change');
  await page.locator('.push-enable').click();
  await page.locator('.push-disable').waitFor({ state: 'visible' });
  assert.match(await page.locator('.push-status').innerText(), /On for this device/);
  await page.screenshot({ path: join(ARTIFACTS, 'push-settings-on.png') });

  const info = await TestClient.authed(pushCommands.wsUrl, svc.token);
  const vapid = ((await info.request({ type: 'push_info' })).data as { vapid_public_key: string }).vapid_public_key;
  info.close();
  assert.deepEqual(await browserSide(), { key: vapid, subscribed: true, endpoint: browserSubscription.endpoint }, "subscribed with the service's VAPID key, userVisibleOnly");
  const deviceId = await page.evaluate(() => localStorage.getItem('remote-assistant.device-id'));
  assert.match(deviceId ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const [device, ...others] = await listDevices();
  assert.deepEqual(others, []);
  assert.equal(device.device_id, deviceId);
  assert.equal(device.device_name, 'Pixel of the test');
  assert.equal(device.endpoint_origin, 'https://push.example.test');
  assert.deepEqual(device.events, { prompt: true, finished: true, failed: true, webhook: true, review: true });
  assert.equal(device.content_blind, false);
  const subscribe = pushCommands.exchanges.find((e) => e.command.type === 'push_subscribe');
  assert.deepEqual(
    subscribe?.command.subscription,
    { endpoint: browserSubscription.endpoint, keys: { p256dh: browserSubscription.p256dh, auth: browserSubscription.auth } },
    "the browser's subscription as it gave it",
  );

  // Send a test: the page shows the service's outcome for this device (here no push service can take it).
  await page.locator('.push-test').click();
  await page.locator('.push-test-result:not(:text("Sending…"))').waitFor({ timeout: 30_000 });
  const tested = pushCommands.exchanges.find((e) => e.command.type === 'push_test');
  assert.equal(tested?.command.device_id, deviceId);
  const outcome = (tested?.answer.data as { results: { device_id: string; ok: boolean; status: number | null; error?: string }[] }).results.find((r) => r.device_id === deviceId);
  assert.ok(outcome, 'the service tried this device');
  assert.equal(
    await page.locator('.push-test-result').innerText(),
    outcome.ok ? 'Sent: it should show in a moment.' : `Not delivered${outcome.status === null ? '' : ` (${outcome.status})`}: ${outcome.error ?? 'the push service refused it'}`,
  );

  await page.locator('input[data-kind="finished"]').uncheck();
  await page.locator('.push-blind').check();
  await page.locator('.push-device-name').fill('Renamed phone');
  await page.locator('.push-device-name').dispatchEvent('change');
  await until(listDevices, (d) => d[0]?.events.finished === false && d[0].content_blind && d[0].device_name === 'Renamed phone', 'push_settings reached the service');
  assert.deepEqual((await listDevices())[0].events, { prompt: true, finished: false, failed: true, webhook: true, review: true });

  // Closed and opened again: the section shows what the service holds.
  await page.locator('.push-close').click();
  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  await openNotifications(page);
  await page.locator('.push-disable').waitFor({ state: 'visible' });
  assert.equal(await page.locator('input[data-kind="finished"]').isChecked(), false);
  assert.equal(await page.locator('.push-blind').isChecked(), true);
  const subscribes = () => pushCommands.exchanges.filter((e) => e.command.type === 'push_subscribe').length;
  assert.equal(subscribes(), 1, 'an unchanged subscription is not registered again');

  // The browser renewed its subscription meanwhile (a new endpoint): the page registers it on its next
  // start, keeping the name and choices the service holds.
  await page.locator('.push-close').click();
  await page.evaluate(() => sessionStorage.setItem('__push', JSON.stringify({ subscribed: false, endpoint: 'https://push2.example.test/send/renewed' })));
  await page.reload();
  const [renewed] = await until(listDevices, (d) => d[0]?.endpoint_origin === 'https://push2.example.test', 'the renewed subscription reached the service');
  assert.equal(renewed.device_name, 'Renamed phone');
  assert.deepEqual(renewed.events, { prompt: true, finished: false, failed: true, webhook: true, review: true });
  assert.equal(renewed.content_blind, true);
  // The proxy records the exchange when the answer passes back through it, which may be just after the
  // service stored the device: wait for it rather than race it.
  await until(
    async () => subscribes(),
    (n) => n === 2,
    'the second push_subscribe recorded',
  );
  await openNotifications(page);
  await page.locator('.push-disable').waitFor({ state: 'visible' });

  await page.locator('.push-disable').click();
  await page.locator('.push-enable').waitFor({ state: 'visible' });
  assert.deepEqual(await listDevices(), []);
  assert.equal((await browserSide())?.subscribed, false, "the browser's subscription is gone too");
  await phone.close();
});

test('a choice tapped while the one before is being saved stays as tapped: the first answer does not draw the boxes back, nor its failure stay once the second is saved', async () => {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const subscription = { endpoint: 'https://push.example.test/send/device-2', p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
  const phone = await phoneContext();
  // Every value the page's code gives the content-blind box (a tap changes it without this setter).
  const watchBlind = `(() => {
    const own = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'checked');
    Object.defineProperty(HTMLInputElement.prototype, 'checked', {
      configurable: true,
      get() { return own.get.call(this); },
      set(value) { if (this.classList.contains('push-blind')) (window.__blindSets = window.__blindSets || []).push(value); own.set.call(this, value); },
    });
  })();`;
  // The service's answers to push_settings held while \`hold\`, then given in order.
  let hold = false;
  const held: { id: string; give: (instead?: string) => void }[] = [];
  const settings = new Set<string>();
  const page = await openPhonePage(phone, svc.httpUrl, async (p) => {
    await p.addInitScript({ content: subscriptionStub(subscription) });
    await p.addInitScript({ content: watchBlind });
    await p.routeWebSocket(/\/ws/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { type?: string; id?: string };
        if (frame.type === 'push_settings' && frame.id !== undefined) settings.add(frame.id);
        server.send(message);
      });
      server.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { id?: string };
        if (hold && frame.id !== undefined && settings.has(frame.id)) held.push({ id: frame.id, give: (instead) => ws.send(instead ?? message) });
        else ws.send(message);
      });
    });
  });
  /** Two taps, the service's answers held until both are in: the two answers, to give in order. */
  const twoTaps = async (first: () => Promise<void>, second: () => Promise<void>) => {
    hold = true;
    await first();
    await until(
      async () => held.length,
      (n) => n === 1,
      "the first tap's answer held",
    );
    await second();
    await until(
      async () => held.length,
      (n) => n === 2,
      "the second tap's answer held",
    );
    hold = false;
    return held.splice(0);
  };
  try {
    await openNotifications(page);
    await page.locator('.push-enable').click();
    await page.locator('.push-disable').waitFor({ state: 'visible' });
    assert.equal(await page.locator('.push-blind').isChecked(), false);

    await page.evaluate(() => ((window as unknown as { __blindSets: boolean[] }).__blindSets = []));
    const given = await twoTaps(
      () => page.locator('input[data-kind="finished"]').uncheck(),
      () => page.locator('.push-blind').check(),
    );
    for (const { give } of given) give();

    await until(listDevices, (d) => d.some((x) => x.endpoint_origin === 'https://push.example.test' && x.events.finished === false && x.content_blind), 'both choices reached the service');
    // Both answers drawn: the last one (the second choice's) sets the box checked.
    const sets = await until(
      () => page.evaluate(() => (window as unknown as { __blindSets: boolean[] }).__blindSets),
      (values) => values.includes(true),
      "the second choice's answer drawn",
    );
    assert.deepEqual(sets, [true], 'the first answer (saved before the second tap) did not draw the box back to unchecked');
    assert.equal(await page.locator('.push-blind').isChecked(), true);
    assert.equal(await page.locator('input[data-kind="finished"]').isChecked(), false);

    // The first of two refused (its answer replaced by an error), the second saved with both boxes: the
    // dialog says what the service holds, not the first one's failure.
    const [refused, saved] = await twoTaps(
      () => page.locator('input[data-kind="failed"]').uncheck(),
      () => page.locator('input[data-kind="webhook"]').uncheck(),
    );
    refused!.give(JSON.stringify({ id: refused!.id, status: 'error', code: 'internal', error: 'refused by the test' }));
    saved!.give();
    await until(listDevices, (d) => d.some((x) => x.endpoint_origin === 'https://push.example.test' && !x.events.failed && !x.events.webhook), 'the second save reached the service');
    await until(
      () => page.locator('.push-status').innerText(),
      (text) => /On for this device/.test(text),
      'the dialog to say what the service holds',
    );
    assert.equal(await page.locator('input[data-kind="failed"]').isChecked(), false);
    assert.equal(await page.locator('input[data-kind="webhook"]').isChecked(), false);
    await page.screenshot({ path: join(ARTIFACTS, 'push-settings-two-taps.png') });
  } finally {
    await page
      .locator('.push-disable')
      .click()
      .catch(() => undefined);
    await phone.close();
  }
});

test('a tap on a prompt shows its card; Allow tapped on a request decided meanwhile says so', async () => {
  const phone = await phoneContext();
  const page = await openPhonePage(phone);
  const worker = await installedWorker(page);
  fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Not listed.', chunks: 1 });
  const script = await TestClient.authed(svc.wsUrl, svc.token);
  const asked = script.next((f) => f.event === 'permission.request');
  const chat = script.request({ type: 'chat', message: 'a prompt to link to' }, CHAT_WAITS_MS);
  const request = (await asked) as { request_id: string; conversation_id: string };
  const card = page.locator(`.permission-card[data-request-id="${request.request_id}"]`);
  await card.waitFor();
  assert.equal(await card.getAttribute('class'), 'permission-card', 'not marked before the tap');
  const notification = { ...prompt(request.conversation_id, request.request_id, 'list_directory'), title: 'Approve list_directory?' };
  await push(worker, notification);
  await tap(worker, notification.tag);
  await page.locator(`.permission-card.linked[data-request-id="${request.request_id}"]`).waitFor();
  await page.locator('.message.user', { hasText: 'a prompt to link to' }).waitFor();

  // Denied by the script (the access token); then Allow is tapped on the stale notification.
  await script.request({ type: 'permission_response', request_id: request.request_id, decision: 'deny' });
  assert.equal((await chat).status, 'ok');
  await push(worker, notification);
  await tap(worker, notification.tag, 'allow');
  const notice = page.locator('.deep-link-notice');
  await notice.waitFor({ state: 'visible' });
  assert.match(await notice.innerText(), /no longer waiting|already denied from this computer/i);
  const answered = pushCommands.exchanges.filter((e) => e.command.type === 'permission_response' && e.command.request_id === request.request_id);
  assert.deepEqual(
    answered.map((e) => e.command.decision),
    ['allow'],
    'the page sent the tapped answer once',
  );
  script.close();
  await phone.close();
});

test("a link from elsewhere cannot answer: without the worker's proof of a tap (or with a forged or spent one) the page only shows the prompt (a spent one: in the test of Allow tapped with no page open)", async () => {
  const phone = await phoneContext();
  const page = await openPhonePage(phone);
  await installedWorker(page);
  fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Denied in the end.', chunks: 1 });
  const script = await TestClient.authed(svc.wsUrl, svc.token);
  const asked = script.next((f) => f.event === 'permission.request');
  const chat = script.request({ type: 'chat', message: 'a prompt someone links to' }, CHAT_WAITS_MS);
  const request = (await asked) as { request_id: string; conversation_id: string };
  const link = `${svc.httpUrl}/?conversation=${request.conversation_id}&request=${request.request_id}&answer=allow`;
  await page.close();
  const answersSent = () => pushCommands.exchanges.filter((e) => e.command.type === 'permission_response' && e.command.request_id === request.request_id).length;
  for (const url of [link, `${link}&tap=forged-token`]) {
    const linked = await phone.newPage();
    await linked.goto(url);
    const notice = linked.locator('.deep-link-notice');
    await notice.waitFor({ state: 'visible' });
    assert.equal(await notice.innerText(), 'A link cannot answer for you: choose on the prompt.');
    assert.equal(await linked.evaluate(() => location.search), '');
    await linked.close();
  }
  assert.equal(answersSent(), 0, 'nothing was answered');
  const reply = script.request({ type: 'permission_response', request_id: request.request_id, decision: 'deny' });
  assert.equal((await reply).status, 'ok', 'the request still waited for a real answer');
  assert.equal((await chat).status, 'ok');
  script.close();
  await phone.close();
});

test('the section says plainly when notifications cannot work: http on a LAN address, no Push API, iPhone not installed, permission refused', async () => {
  const expectations: [string, RegExp][] = [];
  // An http page on a LAN name (not localhost): not a secure context, so no service worker. The name
  // resolves to 127.0.0.1 in a browser of its own (Chromium's host resolver rules).
  const lanBrowser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: [...CHROMIUM_ARGS, '--host-resolver-rules=MAP assistant.lan.test 127.0.0.1'] });
  try {
    const lan = await phoneContext({ browser: lanBrowser });
    const lanPage = await openPhonePage(lan, svc.httpUrl.replace('127.0.0.1', 'assistant.lan.test'));
    assert.equal(await lanPage.evaluate(() => window.isSecureContext), false);
    await openNotifications(lanPage);
    expectations.push([await lanPage.locator('.push-status').innerText(), /use the relay link \(https\) for notifications/]);
    assert.ok(await lanPage.locator('.push-enable').isDisabled());
  } finally {
    await lanBrowser.close();
  }

  const noPush = await phoneContext();
  const noPushPage = await openPhonePage(noPush, svc.httpUrl, (page) => page.addInitScript({ content: 'delete window.PushManager;' }));
  await openNotifications(noPushPage);
  expectations.push([await noPushPage.locator('.push-status').innerText(), /cannot receive notifications/]);
  assert.ok(await noPushPage.locator('.push-enable').isDisabled());
  await noPush.close();

  const iphone = await phoneContext({ userAgent: IPHONE_SAFARI });
  const iphonePage = await openPhonePage(iphone);
  await openNotifications(iphonePage);
  expectations.push([await iphonePage.locator('.push-status').innerText(), /add this page to your Home Screen first/]);
  await iphonePage.screenshot({ path: join(ARTIFACTS, 'push-settings-iphone.png') });
  await iphone.close();

  // The user refuses the browser's permission prompt (headless Chromium refuses what was not granted).
  const refused = await phoneContext({ grant: false });
  const refusedPage = await openPhonePage(refused);
  await openNotifications(refusedPage);
  await refusedPage.locator('.push-enable').click();
  await refusedPage.locator('.push-status', { hasText: 'blocked' }).waitFor();
  expectations.push([await refusedPage.locator('.push-status').innerText(), /Notifications are blocked for this page/]);
  assert.ok(await refusedPage.locator('.push-enable').isVisible(), 'still off');
  await refused.close();
  for (const [shown, expected] of expectations) assert.match(shown, expected);
});

test('visibility: the page tells the service it is on screen after authenticating and on every change (client_state)', async () => {
  const phone = await phoneContext();
  const mark = pushCommands.exchanges.length;
  const page = await openPhonePage(phone);
  const deviceId = await page.evaluate(() => localStorage.getItem('remote-assistant.device-id'));
  const states = () => pushCommands.exchanges.slice(mark).filter((e) => e.command.type === 'client_state');
  const reported = async (count: number) =>
    until(
      async () => states(),
      (s) => s.length >= count,
      `${count} client_state`,
    );
  await reported(1);
  // The browser's signal, as a phone gives it when the page goes to the background and comes back.
  // (A string: the test's compiler would wrap a function's inner arrows in a helper the page does not have.)
  const setVisible = (visible: boolean) =>
    page.evaluate(
      `Object.defineProperty(document, 'visibilityState', { configurable: true, get() { return '${visible ? 'visible' : 'hidden'}'; } }); document.dispatchEvent(new Event('visibilitychange'));`,
    );
  await setVisible(false);
  await reported(2);
  await setVisible(true);
  const all = await reported(3);
  assert.deepEqual(
    all.map((e) => [e.command.device_id, e.command.visible, e.answer.status]),
    [
      [deviceId, true, 'ok'],
      [deviceId, false, 'ok'],
      [deviceId, true, 'ok'],
    ],
    'each change reached the service and was accepted',
  );
  await phone.close();
  assert.deepEqual(pageErrors, []);
});
