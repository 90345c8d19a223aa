/**
 * Devices on the phone page (docs/protocol.md, "Devices"), against the real service serving the page and
 * Debian's chromium: a LAN pairing link with a one-time secret (no token) pairs the page as its own
 * device; the drawer's Devices section lists the paired phones and revokes another one, whose socket
 * closes 4401. Runs after `node esbuild.mjs` (media/chat-phone.js).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { startService, type RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

let svc: RunningService;
let browser: Browser;
let page: Page;
let owner: TestClient;
const clients: TestClient[] = [];
const sentFrames: string[] = [];

before(async () => {
  assert.ok(existsSync(join(resolve('media'), 'chat-phone.js')), 'media/chat-phone.js is missing: run `node esbuild.mjs` first');
  svc = await startService({});
  owner = await TestClient.authed(svc.wsUrl, svc.token);
  clients.push(owner);
  browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('websocket', (socket) => socket.on('framesent', (frame) => sentFrames.push(String(frame.payload))));
  page.on('dialog', (dialog) => void dialog.accept());
});
after(async () => {
  for (const client of clients) client.close();
  await browser?.close();
  await svc?.dispose();
});

const lanSecret = async () => ((await owner.request({ type: 'create_lan_pairing' })).data as { pairing_secret: string }).pairing_secret;
const listed = async () => ((await owner.request({ type: 'list_devices' })).data as { devices: { device_id: string; device_name: string; via: string }[] }).devices;

test('the LAN pairing link holds no token: the page spends its secret for its own device credential and keeps it', async () => {
  const secret = await lanSecret();
  const link = `${svc.httpUrl}/#url=${encodeURIComponent(svc.wsUrl)}&pair=${encodeURIComponent(secret)}`;
  assert.ok(!link.includes(svc.token));
  await page.goto(link);
  await page.locator('.connection[data-state="open"]').waitFor();
  assert.ok(!page.url().includes('#'), 'fragment removed');
  const stored = await page.evaluate(() => ({
    pairing: JSON.parse(localStorage.getItem('remote-assistant.machines') ?? 'null')?.machines[0]?.pairing,
    deviceId: localStorage.getItem('remote-assistant.device-id'),
  }));
  assert.ok(stored.pairing.token && stored.pairing.token !== svc.token, 'a credential of its own');
  assert.equal(stored.pairing.pair, undefined, 'the spent secret is forgotten');
  assert.ok(!sentFrames.some((f) => f.includes(svc.token)), 'the page never sent the access token');
  const mine = (await listed()).find((d) => d.device_id === stored.deviceId);
  assert.equal(mine?.via, 'lan');

  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  assert.ok(sentFrames.filter((f) => f.includes(stored.pairing.token)).length >= 1, 'it comes back with its device token');
});

test('the drawer lists the devices and revokes another phone: its socket closes 4401', async () => {
  const other = await TestClient.connect(svc.wsUrl);
  clients.push(other);
  assert.equal((await other.request({ type: 'auth', pairing_secret: await lanSecret(), device_id: 'other-phone', device_name: 'Other phone' })).status, 'ok');

  if (!(await page.locator('.app.drawer-open').count())) await page.locator('.drawer-toggle').click();
  await page.locator('.devices-open').click();
  await page.locator('.device[data-device-id="other-phone"]').waitFor();
  assert.equal(await page.locator('.device').count(), 2);
  assert.match(await page.locator('.device').first().innerText(), /\(this phone\)/);

  await page.locator('.device[data-device-id="other-phone"] .device-revoke').click();
  assert.equal((await other.waitClose()).code, 4401);
  await page.locator('.device[data-device-id="other-phone"]').waitFor({ state: 'detached' });
  assert.equal(await page.locator('.device').count(), 1);
  assert.deepEqual((await listed()).map((d) => d.device_id).includes('other-phone'), false);
  assert.equal(await page.locator('.connection[data-state="open"]').count(), 1, 'this phone is unaffected');
});
