/**
 * Activity on the phone page (src/web/activity-view.ts; docs/protocol.md, "Audit log") against real parts:
 * the service in process with the fake OpenAI provider asking for a real tool call, media/ served by a
 * static server, Debian's chromium at a phone's size. A phone paired as its own device answers a prompt and
 * changes the mode; Activity shows both with that phone's name and "LAN", under a verified banner, filters
 * by kind and person, pages with Load older and takes new entries live. A tampered record shows the
 * warning; a password user is told only the owner can read it. An entry told live while the page holding it
 * is on its way is shown once. Runs after `node esbuild.mjs` (media/chat-phone.js). Screenshots at 320 and 390 px, light and dark, go to test-output/screenshots/.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { hashPassword } from '../../src/transport/auth/passwords';
import { tamperWithStore } from '../helpers/audit-tamper';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { postJson, startService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

const SCREENSHOTS = resolve('test-output/screenshots');
const PASSWORD = 'correct horse battery staple';
const PHONE_NAME = 'Test Pixel';

let rig: PhoneRig;
let owner: TestClient;

before(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  rig = await startPhoneRig({ permission_mode: 'ask', users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }] });
  owner = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
});

after(async () => {
  owner?.close();
  await rig?.close();
});

/** A phone paired by a one-time LAN secret, as its own device named PHONE_NAME. */
async function pairedPhone() {
  const secret = ((await owner.request({ type: 'create_lan_pairing' })).data as { pairing_secret: string }).pairing_secret;
  return rig.openPhone(async (page) => void (await page.addInitScript((name) => localStorage.setItem('remote-assistant.device-name', name), PHONE_NAME)), `pair=${encodeURIComponent(secret)}`);
}

async function openActivity(page: Page): Promise<void> {
  if (!(await page.locator('.app.drawer-open').count())) await page.locator('.drawer-toggle').click();
  await page.locator('.activity-open').click();
  await page.locator('.activity-panel:not([hidden])').waitFor();
}

/** The entries on screen: kind, who, where, what. */
function entries(page: Page): Promise<{ kind: string; who: string; where: string; summary: string }[]> {
  return page.locator('.activity-entry').evaluateAll((items) =>
    items.map((item) => ({
      kind: (item as HTMLElement).dataset.kind ?? '',
      who: item.querySelector('.activity-who')?.textContent ?? '',
      where: item.querySelector('.activity-where')?.textContent ?? '',
      summary: item.querySelector('.activity-summary')?.textContent ?? '',
    })),
  );
}

/** Screenshots of the open Activity screen at 320 and 390 px wide, light and dark. */
async function shots(page: Page, name: string): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [320, 390]) {
      await page.setViewportSize({ width, height: 760 });
      await page.screenshot({ path: join(SCREENSHOTS, `activity-${name}-${width}-${scheme}.png`) });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 390, height: 844 });
}

/** Every control on the screen can be tapped: at least 44 px high. */
async function smallTargets(page: Page): Promise<string[]> {
  return page
    .locator('.activity-panel button:visible, .activity-panel select:visible')
    .evaluateAll((controls) => controls.filter((c) => c.getBoundingClientRect().height < 44).map((c) => `${c.className}: ${c.getBoundingClientRect().height}px`));
}

test('a prompt answered and the mode changed on a paired phone are in its Activity, with that phone and LAN, under a verified banner', async () => {
  const phone = await pairedPhone();
  const { page } = phone;
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'audit.txt', content: 'recorded\n' } }] }, { text: 'Written.', chunks: 1 });
  const input = page.locator('.composer-input');
  await page.waitForFunction(() => !(document.querySelector('.composer-input') as HTMLTextAreaElement).disabled);
  await input.fill('write audit.txt');
  await input.press('Enter');
  const card = page.locator('.permission-card');
  await card.waitFor();
  await card.locator('button[data-decision="allow"]').click();
  await card.waitFor({ state: 'detached' });
  await page.waitForFunction(() => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('Written.'));
  await page.locator('.mode-select').selectOption('allow');
  await page.waitForFunction(() => (document.querySelector('.mode-select') as HTMLSelectElement).value === 'allow');

  await openActivity(page);
  const verdict = page.locator('.activity-verdict');
  await verdict.waitFor();
  assert.equal(await verdict.getAttribute('data-ok'), 'true');
  assert.match(await verdict.innerText(), /Record verified \(\d+ entries\)/);
  await page.locator('.activity-entry[data-kind="mode.changed"]').waitFor();
  const shown = await entries(page);
  const answer = shown.find((e) => e.kind === 'permission.answer');
  assert.ok(answer, `a permission answer among ${JSON.stringify(shown)}`);
  assert.match(answer.who, new RegExp(PHONE_NAME));
  assert.match(answer.where, /^LAN\b/);
  assert.equal(answer.summary, 'Allowed: Write audit.txt', 'in the card\'s words, not the record\'s ("Allowed write_file audit.txt", s32)');
  const mode = shown.find((e) => e.kind === 'mode.changed');
  assert.ok(mode);
  assert.match(mode.who, new RegExp(PHONE_NAME));
  assert.ok(shown.findIndex((e) => e.kind === 'mode.changed') < shown.findIndex((e) => e.kind === 'permission.answer'), 'newest first');

  // Tapped: the exact time and the entry's facts; the time's title holds the exact time too.
  const entry = page.locator('.activity-entry[data-kind="permission.answer"]').first();
  assert.ok(await entry.locator('time').getAttribute('title'));
  await entry.locator('.activity-entry-toggle').click();
  await entry.locator('.activity-details:not([hidden]) .activity-exact').waitFor();
  assert.match(await entry.locator('.activity-exact').innerText(), /^Entry #\d+ · \S/);
  assert.deepEqual(await smallTargets(page), [], 'tap targets of at least 44 px');
  await shots(page, 'verified');

  // Filters: a kind, then a person (as the service filters them).
  await page.locator('.activity-kind').selectOption('mode.changed');
  await page.waitForFunction(
    () => Array.from(document.querySelectorAll('.activity-entry')).every((e) => (e as HTMLElement).dataset.kind === 'mode.changed') && document.querySelectorAll('.activity-entry').length > 0,
  );
  await page.locator('.activity-kind').selectOption('');
  await page.locator('.activity-person').selectOption(PHONE_NAME);
  await page.waitForFunction((name) => {
    const who = Array.from(document.querySelectorAll('.activity-entry .activity-who')).map((e) => e.textContent ?? '');
    return who.length > 0 && who.every((w) => w.includes(name));
  }, PHONE_NAME);
  const byPhone = await entries(page);
  assert.ok(byPhone.some((e) => e.kind === 'permission.answer') && byPhone.some((e) => e.kind === 'mode.changed'));
  await page.locator('.activity-person').selectOption('');

  // Recorded while the screen is open: it comes in at the top. (The phone's own mode change was already the
  // newest entry: waited for by count, not by the top entry's kind, which held before the owner's came.)
  const modeEntries = () => page.locator('.activity-entry[data-kind="mode.changed"]').count();
  const before = await modeEntries();
  assert.equal((await owner.request({ type: 'update_config', config: { permission_mode: 'ask' } })).status, 'ok');
  await page.waitForFunction(
    (count) =>
      document.querySelectorAll('.activity-entry[data-kind="mode.changed"]').length > count &&
      (document.querySelector('.activity-entry') as HTMLElement | null)?.dataset.kind === 'mode.changed' &&
      document.querySelector('.activity-entry .activity-who')?.textContent !== '',
    before,
  );
  assert.doesNotMatch((await entries(page))[0].who, new RegExp(PHONE_NAME), 'the owner, not the phone');

  await page.locator('.activity-close').click();
  await page.locator('.activity-panel').waitFor({ state: 'hidden' });
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("a model's path made of markup is shown in Activity as text: the card's words (s32) and the recorded line build no element and run nothing", async () => {
  const phone = await pairedPhone();
  const { page } = phone;
  const hostile = '<img src=x onerror="window.pwned=1">.txt';
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: hostile, content: 'x\n' } }] }, { text: 'Done.', chunks: 1 });
  const input = page.locator('.composer-input');
  await page.waitForFunction(() => !(document.querySelector('.composer-input') as HTMLTextAreaElement).disabled);
  await input.fill('write the file');
  await input.press('Enter');
  const card = page.locator('.permission-card');
  await card.waitFor();
  await card.locator('button[data-decision="allow"]').click();
  await card.waitFor({ state: 'detached' });
  await openActivity(page);
  const entry = page.locator('.activity-entry[data-kind="permission.answer"]', { hasText: hostile }).first();
  await entry.waitFor();
  await entry.locator('.activity-entry-toggle').click();
  await entry.locator('.activity-details:not([hidden]) .activity-recorded').waitFor();
  assert.equal(await entry.locator('.activity-summary').textContent(), `Allowed: Write ${hostile}`);
  assert.match((await entry.locator('.activity-recorded').textContent()) ?? '', /Recorded as “Allowed write_file <img src=x onerror="window\.pwned=1">\.txt/);
  assert.equal(await page.locator('.activity-panel img').count(), 0, 'no element made of the path');
  assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined, 'nothing of it ran');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('Load older pages back through the record until it ends', async () => {
  for (let i = 0; i < 55; i++) assert.equal((await owner.request({ type: 'update_config', config: { temperature: (i % 20) / 10 + 0.05 } })).status, 'ok');
  const phone = await rig.openPhone();
  const { page } = phone;
  await openActivity(page);
  await page.locator('.activity-entry').first().waitFor();
  const first = await page.locator('.activity-entry').count();
  assert.equal(first, 50, 'one page');
  const older = page.locator('.activity-older');
  assert.ok(await older.isVisible());
  await older.click();
  await page.waitForFunction((n) => document.querySelectorAll('.activity-entry').length > n, first);
  while (await older.isVisible()) {
    const n = await page.locator('.activity-entry').count();
    await older.click();
    await page.waitForFunction((count) => document.querySelectorAll('.activity-entry').length > count, n);
  }
  const seqs = await page.locator('.activity-entry').evaluateAll((items) => items.map((item) => Number((item as HTMLElement).dataset.seq)));
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => b - a),
    'newest first, no entry twice',
  );
  assert.equal(new Set(seqs).size, seqs.length);
  assert.equal(seqs.at(-1), 1, 'down to the first entry');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('an entry told live (audit.appended) while the page that also holds it is on its way is shown once', async () => {
  // The page's list_audit is held on its way to the service (the socket routed through the test) until
  // the entry it will bring has been told live and drawn; then it goes, and its answer holds that entry too.
  // One entry at least before the live one (the test may run alone).
  assert.equal((await owner.request({ type: 'update_config', config: { temperature: 0.3 } })).status, 'ok');
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  const phone = await rig.openPhone((page) =>
    page.routeWebSocket(/\/ws$/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { type?: string };
        if (frame.type !== 'list_audit' || held) return server.send(message);
        held = true;
        void released.then(() => server.send(message));
      });
    }),
  );
  const { page } = phone;
  await openActivity(page);
  await page.waitForFunction(() => document.querySelector('.activity-status')?.textContent === 'Loading…');
  assert.equal(await page.locator('.activity-entry').count(), 0, 'the page is held');
  assert.equal((await owner.request({ type: 'update_config', config: { temperature: 0.35 } })).status, 'ok');
  await page.locator('.activity-entry').first().waitFor();
  const live = Number(await page.locator('.activity-entry').first().getAttribute('data-seq'));
  assert.ok(live > 1, `the live entry #${live}`);

  release();
  // The page's entries arrive below it: the one before the live entry among them.
  await page.locator(`.activity-entry[data-seq="${live - 1}"]`).waitFor();
  const seqs = await page.locator('.activity-entry').evaluateAll((items) => items.map((item) => Number((item as HTMLElement).dataset.seq)));
  assert.equal(seqs.filter((seq) => seq === live).length, 1, `entry #${live} shown once (${seqs.slice(0, 4).join(', ')}, ...)`);
  assert.equal(new Set(seqs).size, seqs.length, 'no entry twice');
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => b - a),
    'newest first',
  );
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('an entry edited in the stopped service’s database: Activity warns that the record was altered at that entry', async () => {
  const first = await startService({});
  const lan = await TestClient.authed(first.wsUrl, first.token);
  for (const temperature of [0.2, 0.4, 0.6]) assert.equal((await lan.request({ type: 'update_config', config: { temperature } })).status, 'ok');
  const listed = (await lan.request({ type: 'list_audit' })).data as { entries: { seq: number }[] };
  assert.ok(listed.entries.length >= 3);
  const edited = listed.entries[1].seq;
  lan.close();
  await first.stop();
  // Someone with the files rewrites what an entry says, leaving its hash as it was.
  await tamperWithStore(first.dataDir, "UPDATE audit_log SET summary = 'Nothing happened' WHERE seq = ?", [edited]);
  const svc = await startService({}, { dataDir: first.dataDir, keepConfig: true });
  const context = await rig.browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(`${rig.site.url}/phone.html#url=${encodeURIComponent(svc.wsUrl)}&token=${encodeURIComponent(svc.token)}`);
    await page.locator('.connection[data-state="open"]').waitFor();
    await openActivity(page);
    const verdict = page.locator('.activity-verdict[data-ok="false"]');
    await verdict.waitFor();
    assert.equal(await verdict.getAttribute('role'), 'alert');
    assert.match(await verdict.innerText(), new RegExp(`The record was altered at entry #${edited}`));
    await page.locator(`.activity-entry[data-seq="${edited}"]`).waitFor();
    assert.equal(await page.locator(`.activity-entry[data-seq="${edited}"] .activity-summary`).innerText(), 'Nothing happened', 'the entries are still shown, under the warning');
    await page.locator(`.activity-entry.altered[data-seq="${edited}"] .activity-altered`).waitFor();
    assert.equal(await page.locator('.activity-entry.altered').count(), 1, 'only the entry where the chain breaks is marked');
    await shots(page, 'altered');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    await svc.dispose();
  }
});

test('a password user is told only the owner can read the record, and sees none of it', async () => {
  const login = await postJson(`${rig.svc.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
  const token = (login.body!.data as { token: string }).token;
  const phone = await rig.openPhone(undefined, `token=${encodeURIComponent(token)}`);
  const { page } = phone;
  await openActivity(page);
  await page.locator('.activity-panel.refused').waitFor();
  assert.match(await page.locator('.activity-status').innerText(), /Only the owner of this computer can read its activity record/);
  assert.equal(await page.locator('.activity-entry').count(), 0);
  assert.ok(await page.locator('.activity-filters').isHidden());
  assert.ok(await page.locator('.activity-verdict').isHidden());
  assert.ok(
    phone.sent.some((frame) => frame.type === 'list_audit'),
    'the page asked; the service refused',
  );
  await shots(page, 'password-user');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
