/**
 * One phone, several machines (issue 12): one phone page (Debian's chromium at a phone's size) and two
 * real services (fake OpenAI providers) behind one real Node relay, which also serves the page. The page
 * pairs with both from their QR links (the second opened into the open page), switches between them
 * (each shows its own conversations), shows a prompt waiting on B while A is on screen (switcher and the
 * combined "Needs you" list), answers it from the list (B's tool runs), lists B's finished run and opens
 * it, and shows B offline when B stops while A keeps working. Runs after `node esbuild.mjs`.
 * Screenshots: test-output/screenshots/ (gitignored).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { RELAY_TOKEN, startRelay, type RunningRelay } from '../helpers/relay-link-harness';
import { startService, type RunningService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { keptFiles, waitForKeptFiles } from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';

const MEDIA = resolve('media');
const SCREENSHOTS = resolve('test-output/screenshots');
const WAIT = 15_000;
const FAST = { baseDelayMs: 50, maxDelayMs: 300 };
/** The machine view on screen (every paired machine has one; the others are hidden). */
const SHOWN = '.machine-view:not([hidden])';

interface Machine {
  fake: FakeOpenAI;
  svc: RunningService;
  lan: TestClient;
  workspace: { dir: string; cleanup: () => Promise<void> };
  /** The page's id of this machine (its relay key). */
  id: string;
  pairingUrl: string;
}

let relay: RunningRelay;
let browser: Browser;
let page: Page;
let a: Machine;
let b: Machine;
const pageErrors: string[] = [];
/** B's conversation whose prompt the combined list answered. */
let bConversation: string;

async function startMachine(mode: 'allow' | 'ask', title: string): Promise<Machine> {
  const workspace = await tempDir('ra-machine-');
  const fake = await startFakeOpenAI();
  const svc = await startService(
    { base_url: fake.url, model: 'fake-model', workspace: workspace.dir, permission_mode: mode, channels: [{ name: 'relay', type: 'websocket', url: relay.wsUrl, auth_token: RELAY_TOKEN }] },
    { relay: FAST },
  );
  await waitFor(() => svc.service.relay.status()[0]?.state === 'online', 'relay link online', WAIT);
  const lan = await TestClient.authed(svc.wsUrl, svc.token);
  // A conversation of its own, so each machine's list says which machine is shown.
  fake.script({ text: `reply on ${title}`, chunks: 1 });
  assert.equal((await lan.request({ type: 'chat', message: title })).status, 'ok');
  const pairing = (await lan.request({ type: 'create_pairing' })).data as { pairing_url: string; machine_key: string };
  return { fake, svc, lan, workspace, id: `relay:${pairing.machine_key}`, pairingUrl: pairing.pairing_url };
}

before(async () => {
  assert.ok(existsSync(join(MEDIA, 'chat-phone.js')), 'media/chat-phone.js is missing: run `node esbuild.mjs` first');
  await mkdir(SCREENSHOTS, { recursive: true });
  relay = await startRelay(0, MEDIA);
  a = await startMachine('allow', 'Topic on machine A');
  b = await startMachine('ask', 'Topic on machine B');
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  await context.grantPermissions(['notifications'], { origin: relay.httpUrl });
  page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  page.on('dialog', (dialog) => void dialog.accept());
});

after(async () => {
  await browser?.close();
  for (const m of [a, b]) {
    m?.lan.close();
    await m?.svc.dispose();
    await m?.fake.close();
    await m?.workspace.cleanup();
  }
  await relay?.close();
});

const view = (m: Machine) => page.locator(`.machine-view[data-machine-id="${m.id}"]`);
const machineRow = (m: Machine) => page.locator(`.machines-panel .machine[data-machine-id="${m.id}"]`);
const openPanel = async () => {
  if (await page.locator('.machines-panel').isHidden()) await page.locator(`${SHOWN} .machine-switch`).click();
};
const closePanel = async () => {
  if (await page.locator('.machines-panel').isVisible()) await page.locator('.machines-close').click();
};
const conversationTitles = async () => {
  await page.locator(`${SHOWN} .drawer-toggle`).click();
  const titles = await page.locator(`${SHOWN} .conversation-list .conversation`).allInnerTexts();
  await page.locator(`${SHOWN} .drawer-toggle`).click();
  return titles.join('\n');
};

test('pairing a second machine adds it beside the first; switching shows each machine its own conversations', async () => {
  await page.goto(a.pairingUrl);
  await view(a).locator('.connection[data-state="open"]').waitFor();
  // B's QR code opened into the same page (only the fragment changes).
  await page.goto(b.pairingUrl);
  await view(b).locator('.connection[data-state="open"]').waitFor();
  assert.equal(await view(a).locator('.connection').getAttribute('data-state'), 'open', 'A stays paired and connected');
  assert.ok(!page.url().includes('#'), 'fragment removed');

  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('remote-assistant.machines') ?? 'null') as { machines: { id: string; pairing: { token: string; pair?: string } }[] });
  assert.deepEqual(stored.machines.map((m) => m.id).sort(), [a.id, b.id].sort(), 'both machines kept');
  for (const m of stored.machines) assert.ok(m.pairing.token && !m.pairing.pair, 'each with its own device credential, its secret spent');

  await page.waitForFunction((sel) => document.querySelectorAll(`${sel} .conversation-list .conversation`).length > 0, SHOWN);
  let titles = await conversationTitles();
  assert.match(titles, /Topic on machine B/);
  assert.doesNotMatch(titles, /Topic on machine A/);

  await openPanel();
  await machineRow(a).locator('.machine-state', { hasText: 'online' }).waitFor();
  // Named by their links (both services run on this host: the page tells them apart).
  assert.equal(await machineRow(a).locator('.machine-name').innerText(), hostname());
  assert.equal(await machineRow(b).locator('.machine-name').innerText(), `${hostname()} (2)`);
  await machineRow(a).locator('.machine-select').click();
  await view(a).waitFor({ state: 'visible' });
  assert.ok(await view(b).isHidden());
  await page.waitForFunction((sel) => document.querySelectorAll(`${sel} .conversation-list .conversation`).length > 0, SHOWN);
  titles = await conversationTitles();
  assert.match(titles, /Topic on machine A/);
  assert.doesNotMatch(titles, /Topic on machine B/);
  assert.equal(await page.locator(`${SHOWN} .machine-switch-name`).innerText(), hostname());
  await page.screenshot({ path: join(SCREENSHOTS, 'machines-header.png') });
});

test("a prompt waiting on B while A is shown: the switcher says B '1 waiting', the combined list has it, and Allow there runs B's tool", async () => {
  assert.ok(await view(a).isVisible(), 'A is on screen');
  b.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Listed on B.', chunks: 1 });
  const chat = b.lan.request({ type: 'chat', message: 'List the files on B' }, WAIT * 2);

  await page.locator(`${SHOWN} .machine-switch-badge`, { hasText: '1' }).waitFor();
  await openPanel();
  await machineRow(b).locator('.machine-state', { hasText: '1 waiting' }).waitFor();
  assert.equal(await machineRow(b).getAttribute('data-state'), 'waiting');
  const item = page.locator(`.needs-you-item[data-kind="prompt"][data-machine-id="${b.id}"]`);
  await item.waitFor();
  // Asked in words (src/protocol/tool-words.ts), not by the tool's name.
  assert.match(await item.innerText(), /List the workspace folder\?/);
  await page.screenshot({ path: join(SCREENSHOTS, 'machines-switcher-waiting.png') });

  await item.locator('.needs-you-show').click();
  await item.locator('.needs-you-review .preview').waitFor();
  await item.locator('.needs-you-allow').click();
  const reply = await chat;
  assert.equal(reply.status, 'ok');
  assert.equal((reply.data as { response: string }).response, 'Listed on B.');
  bConversation = (reply.data as { conversation_id: string }).conversation_id;
  const tools = (await b.lan.request({ type: 'get_messages', conversation_id: (reply.data as { conversation_id: string }).conversation_id, include_tools: true })).data as {
    messages: { role: string; content: string }[];
  };
  assert.ok(
    tools.messages.some((m) => m.role === 'tool' && !/denied/i.test(m.content)),
    "B's tool ran",
  );
  await item.waitFor({ state: 'detached' });
  await page.locator('.needs-you-outcome', { hasText: 'Allowed' }).waitFor();
  await machineRow(b).locator('.machine-state', { hasText: 'online' }).waitFor();
});

test("B's run finished while A was shown: it is in the combined list, and tapping it switches to B and opens the conversation", async () => {
  await openPanel();
  const finished = page.locator(`.needs-you-item[data-kind="finished"][data-machine-id="${b.id}"]`);
  await finished.waitFor();
  assert.match(await finished.innerText(), /List the files on B/);
  await page.screenshot({ path: join(SCREENSHOTS, 'machines-needs-you.png') });
  await finished.locator('.needs-you-open').click();
  await view(b).waitFor({ state: 'visible' });
  assert.ok(await page.locator('.machines-panel').isHidden());
  await view(b).locator('.message.assistant', { hasText: 'Listed on B.' }).waitFor();
  assert.match(await view(b).locator('.title').innerText(), /List the files on B/);
  await openPanel();
  await finished.waitFor({ state: 'detached' });
  await page.locator('.needs-you-empty').waitFor();
  await closePanel();
});

test("tapping a prompt of B in the combined list while A is shown opens B's conversation with its prompt card", async () => {
  await openPanel();
  await machineRow(a).locator('.machine-select').click();
  await view(a).waitFor({ state: 'visible' });
  b.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'Not listed.', chunks: 1 });
  const chat = b.lan.request({ type: 'chat', message: 'List again on B' }, WAIT * 2);
  await openPanel();
  const item = page.locator(`.needs-you-item[data-kind="prompt"][data-machine-id="${b.id}"]`);
  await item.waitFor();
  const requestId = await item.getAttribute('data-request-id');
  await item.locator('.needs-you-open').click();
  await view(b).waitFor({ state: 'visible' });
  const card = view(b).locator(`.permission-card[data-request-id="${requestId}"]`);
  await card.waitFor({ state: 'visible' });
  await view(b).locator('.title', { hasText: 'List again on B' }).waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, 'machines-prompt-opened-on-b.png') });
  await card.locator('button[data-decision="deny"]').click();
  assert.equal(((await chat).data as { response: string }).response, 'Not listed.');
  await openPanel();
  await item.waitFor({ state: 'detached' });
  await closePanel();
});

test("a notification's link to B's conversation, opened while A is shown, opens it on B", async () => {
  await openPanel();
  await machineRow(a).locator('.machine-select').click();
  await view(a).waitFor({ state: 'visible' });
  await page.goto(`${new URL(page.url()).origin}/?conversation=${encodeURIComponent(bConversation)}`);
  await view(b).waitFor({ state: 'visible' });
  await view(b).locator('.message.assistant', { hasText: 'Listed on B.' }).waitFor();
  assert.ok(await view(a).isHidden());
  assert.equal(new URL(page.url()).search, '', 'the link leaves the address bar');
});

test("each machine has its own push worker; a tap on B's notification while A is shown opens the conversation on B (the link names B)", async () => {
  await openPanel();
  await machineRow(a).locator('.machine-select').click();
  await view(a).waitFor({ state: 'visible' });
  const slots = await page.evaluate(() => (JSON.parse(localStorage.getItem('remote-assistant.machines') ?? 'null') as { machines: { id: string; slot: string }[] }).machines);
  const slotOf = (m: Machine) => slots.find((entry) => entry.id === m.id)!.slot;
  const origin = new URL(page.url()).origin;
  const scopes = await waitFor(
    async () => {
      const found = await page.evaluate(async () => (await navigator.serviceWorker.getRegistrations()).map((r) => r.scope));
      return found.length >= 3 ? found : undefined;
    },
    "the machines' workers registered",
    WAIT,
  );
  for (const m of [a, b]) assert.ok(scopes.includes(`${origin}/machine/${slotOf(m)}/`), `a registration of its own for ${m.id}`);

  const worker = await waitFor(
    async () => {
      for (const candidate of page.context().serviceWorkers()) {
        if ((await candidate.evaluate(() => (self as unknown as { registration: ServiceWorkerRegistration }).registration.scope)) === `${origin}/machine/${slotOf(b)}/`) return candidate;
      }
      return undefined;
    },
    "B's worker running",
    WAIT,
  );
  await page.evaluate(() => {
    const seen: string[] = ((window as unknown as { opened: string[] }).opened = []);
    navigator.serviceWorker.addEventListener('message', (event) => seen.push((event.data as { url: string }).url));
  });
  // B's service pushed a finished run; the user taps it (as phone-push.test.ts does: synthetic events).
  await worker.evaluate(async (conversationId) => {
    const scope = self as unknown as EventTarget & { registration: ServiceWorkerRegistration; NotificationEvent: new (type: string, init: { notification: Notification; action: string }) => Event };
    await scope.registration.showNotification('Finished on B', { tag: `run:${conversationId}`, data: { url: `./?conversation=${conversationId}`, conversation_id: conversationId } });
    const [notification] = await scope.registration.getNotifications({ tag: `run:${conversationId}` });
    const event = new scope.NotificationEvent('notificationclick', { notification, action: '' });
    let pending: Promise<unknown> | undefined;
    (event as unknown as { waitUntil: (p: Promise<unknown>) => void }).waitUntil = (p) => void (pending = p);
    scope.dispatchEvent(event);
    await pending;
  }, bConversation);
  const opened = await waitFor(() => page.evaluate(() => (window as unknown as { opened: string[] }).opened[0]), 'the tap reached the page', WAIT);
  assert.equal(new URL(opened).searchParams.get('machine'), slotOf(b), 'the link names the machine');
  await view(b).waitFor({ state: 'visible' });
  await view(b).locator('.message.assistant', { hasText: 'Listed on B.' }).waitFor();
});

test("through the relay: a phone that knows only A adds B from B's pasted relay pairing link (the tunnel's key registered by the trial, then used by B's chat)", async () => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  const other = await context.newPage();
  other.setDefaultTimeout(WAIT);
  const errors: string[] = [];
  other.on('pageerror', (error) => errors.push(String(error)));
  const fresh = async (m: Machine) => ((await m.lan.request({ type: 'create_pairing' })).data as { pairing_url: string }).pairing_url;
  const deviceIds = async (m: Machine) => ((await m.lan.request({ type: 'list_devices' })).data as { devices: { device_id: string }[] }).devices.map((d) => d.device_id);
  const before = { a: await deviceIds(a), b: await deviceIds(b) };
  await other.goto(await fresh(a));
  await other.locator(`.machine-view[data-machine-id="${a.id}"] .connection[data-state="open"]`).waitFor();
  await other.locator(`${SHOWN} .machine-switch`).click();
  await other.locator('.add-machine-toggle').click();
  await other.locator('#ra-add-link').fill(await fresh(b));
  await other.locator('.add-machine-submit').click();
  await other.locator(`${SHOWN}[data-machine-id="${b.id}"] .connection[data-state="open"]`).waitFor();
  b.fake.script({ text: 'B answers the added phone', chunks: 1 });
  await other.locator(`${SHOWN} .composer-input`).fill('hello B through the relay');
  await other.locator(`${SHOWN} .composer-input`).press('Enter');
  await other.locator(`${SHOWN} .message.assistant`, { hasText: 'B answers the added phone' }).waitFor();
  const stored = await other.evaluate(() => JSON.parse(localStorage.getItem('remote-assistant.machines') ?? 'null') as { machines: { id: string }[] });
  assert.deepEqual(stored.machines.map((m) => m.id).sort(), [a.id, b.id].sort());
  assert.deepEqual(errors, []);
  await context.close();
  // This second phone goes again: the tests after count the first phone's devices.
  for (const [m, known] of [
    [a, before.a],
    [b, before.b],
  ] as const)
    for (const id of await deviceIds(m)) if (!known.includes(id)) await m.lan.request({ type: 'revoke_device', device_id: id });
});

test("a file attached on B is kept under B: a reload with A shown keeps it (A's start deletes none of B's), B's tray has it, and its × deletes it", async () => {
  await openPanel();
  await machineRow(b).locator('.machine-select').click();
  await view(b).waitFor({ state: 'visible' });
  await view(b)
    .locator('.attach-input')
    .setInputFiles({ name: 'b-notes.txt', mimeType: 'text/plain', buffer: Buffer.from('notes for B\n') });
  await view(b).locator('.attachment-chip[data-state="ready"]').waitFor();
  await waitForKeptFiles(page, 1);
  assert.deepEqual(
    (await keptFiles(page)).map((f) => [f.machine, f.name]),
    [[b.id, 'b-notes.txt']],
    'kept under B',
  );
  await openPanel();
  await machineRow(a).locator('.machine-select').click();
  await view(a).waitFor({ state: 'visible' });
  await page.reload();
  await view(a).locator('.connection[data-state="open"]').waitFor();
  await view(b).locator('.attachment-chip[data-state="ready"]', { hasText: 'b-notes.txt' }).waitFor({ state: 'attached' });
  assert.equal(await view(a).locator('.attachment-chip').count(), 0, "not in A's tray");
  assert.deepEqual(
    (await keptFiles(page)).map((f) => f.name),
    ['b-notes.txt'],
    "still kept after A's start",
  );
  await openPanel();
  await machineRow(b).locator('.machine-select').click();
  await view(b).locator('.attachment-remove').click();
  await waitForKeptFiles(page, 0);
  await openPanel();
  await machineRow(a).locator('.machine-select').click();
  await view(a).waitFor({ state: 'visible' });
  assert.deepEqual(pageErrors, []);
});

test('B stops: the switcher shows it offline while A keeps working', async () => {
  await b.svc.stop();
  await openPanel();
  await machineRow(b).locator('.machine-state', { hasText: 'offline' }).waitFor();
  assert.equal(await machineRow(a).getAttribute('data-state'), 'online');
  await page.screenshot({ path: join(SCREENSHOTS, 'machines-offline.png') });
  await machineRow(a).locator('.machine-select').click();
  await view(a).waitFor({ state: 'visible' });

  a.fake.script({ text: 'A still answers.', chunks: 2 });
  await view(a)
    .locator('.new-chat')
    .click({ force: true })
    .catch(() => undefined);
  const input = view(a).locator('.composer-input');
  await input.fill('Are you there, A?');
  await input.press('Enter');
  await view(a).locator('.message.assistant', { hasText: 'A still answers.' }).waitFor();
  assert.deepEqual(pageErrors, []);
});

test('after a reload both machines come back: the one on screen stays on screen with its conversation, B (stopped) is offline', async () => {
  await page.reload();
  await view(a).locator('.connection[data-state="open"]').waitFor();
  assert.ok(await view(a).isVisible());
  await view(a).locator('.message.assistant', { hasText: 'A still answers.' }).waitFor();
  await openPanel();
  await machineRow(b).locator('.machine-state', { hasText: 'offline' }).waitFor();
  await closePanel();
});

test("removing a machine revokes this phone's credential there and forgets it; the other machine stays", async () => {
  const devices = async () => ((await a.lan.request({ type: 'list_devices' })).data as { devices: { device_id: string }[] }).devices;
  assert.equal((await devices()).length, 1, 'the phone is a device of A');
  await openPanel();
  await machineRow(a).locator('.machine-remove').click();
  await waitFor(async () => (await devices()).length === 0, "the phone's device on A revoked", WAIT);
  await machineRow(a).waitFor({ state: 'detached' });
  await view(b).waitFor({ state: 'visible' });
  const stored = await page.evaluate(() => ({ list: JSON.parse(localStorage.getItem('remote-assistant.machines') ?? 'null') as { machines: { id: string }[] }, keys: Object.keys(localStorage) }));
  assert.deepEqual(
    stored.list.machines.map((m) => m.id),
    [b.id],
  );
  assert.ok(!stored.keys.some((key) => key.includes(a.id)), "nothing of A's is kept");
  assert.deepEqual(pageErrors, []);
});
