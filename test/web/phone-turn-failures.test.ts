/**
 * The phone page, a day's use (s24, phone24b): a failed turn is said at the turn in words a phone user
 * can act on, with Retry; a rate limit being waited out says so; who sent a message is named only when
 * it was someone else (never "access token"); a computer that refuses the phone's credential offers
 * "Pair again" and the message box tells the truth. Real parts (test/helpers/phone-rig.ts); runs after
 * `node esbuild.mjs`. Screenshots at 360 and 390 px, light and dark, under test-output/screens/.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { hashPassword } from '../../src/transport/auth/passwords';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { postJson } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

const PASSWORD = 'correct horse battery staple';
const SCREENS = join('test-output', 'screens');
let rig: PhoneRig;

before(async () => {
  await mkdir(SCREENS, { recursive: true });
  const password_hash = await hashPassword(PASSWORD);
  rig = await startPhoneRig({
    permission_mode: 'allow',
    users: [
      { username: 'ada', password_hash },
      { username: 'bob', password_hash },
    ],
  });
});

after(async () => {
  await rig?.close();
});

async function shots(page: Page, name: string): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [360, 390]) {
      await page.setViewportSize({ width, height: 780 });
      await page.screenshot({ path: join(SCREENS, `day-use-${name}-${width}-${scheme}.png`) });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

async function send(page: Page, text: string): Promise<void> {
  const input = page.locator('.composer-input');
  await input.fill(text);
  await input.press('Enter');
}

/** The text of the element right after the user bubble holding `text` (what is said under it). */
function after_(page: Page, text: string): Promise<string> {
  return page.locator('.message.user', { hasText: text }).evaluate((node) => (node.nextElementSibling as HTMLElement | null)?.className ?? '');
}

test('a refused key is said under the message that failed, in words a phone user can act on; Retry runs it again, once', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script({ status: 401 });
  await send(page, 'This one fails');
  const failure = page.locator('.turn-failure');
  await failure.waitFor();
  assert.equal(await failure.locator('.turn-failure-text').innerText(), "The computer's OpenAI key was refused: set it on the computer, then retry.");
  assert.match(await after_(page, 'This one fails'), /turn-failure/, 'said at the turn, under the message that failed');
  assert.equal(await page.locator('.banner').count(), 0, 'no banner at the top');
  assert.doesNotMatch(await page.locator('body').innerText(), /check the API key|sk-/i);
  await shots(page, 'failed-401');

  const before = rig.fake.requests.length;
  rig.fake.script({ text: 'Worked this time.', chunks: 1 });
  await failure.locator('button.turn-retry').click();
  await page.locator('.message.assistant', { hasText: 'Worked this time.' }).waitFor();
  assert.equal(rig.fake.requests.length, before + 1, 'Retry asked the model once');
  assert.ok(await failure.locator('button.turn-retry').isDisabled(), 'Retry is spent: a second tap cannot send it twice');
  const chats = phone.sent.filter((f) => f.type === 'chat');
  assert.equal(chats.length, 2);
  assert.equal(chats[1].message, 'This one fails');
  assert.notEqual(chats[1].client_message_id, chats[0].client_message_id, 'a new message of its own, not a resend the service answers from memory');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a rate limit being waited out says so at the turn, then the answer comes', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script({ status: 429, retryAfter: 2 }, { text: 'After the wait.', chunks: 1 });
  await send(page, 'Rate limited');
  const waiting = page.locator('.turn-waiting');
  await waiting.waitFor();
  assert.match(await waiting.innerText(), /^Rate limited; retrying in [12] s$/);
  await shots(page, 'rate-limited-waiting');
  await page.locator('.message.assistant', { hasText: 'After the wait.' }).waitFor();
  assert.equal(await waiting.count(), 0, 'the wait is over once the answer comes');
  assert.equal(await page.locator('.turn-failure').count(), 0);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a rate limit that does not pass: the words say to wait and retry, not "retry after 2 s"', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script({ status: 429, retryAfter: 1 }, { status: 429, retryAfter: 1 }, { status: 429, retryAfter: 1 });
  await send(page, 'Still limited');
  const failure = page.locator('.turn-failure');
  await failure.waitFor({ timeout: 15_000 });
  assert.equal(await failure.locator('.turn-failure-text').innerText(), 'OpenAI is rate limiting the computer: wait a moment, then retry.');
  assert.equal(await page.locator('.turn-waiting').count(), 0);
  await shots(page, 'rate-limited-final');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("a password user's own messages name no sender; another person's and the computer's do, never as \"access token\"", async () => {
  const login = async (username: string) => ((await postJson(`${rig.svc.httpUrl}/auth`, { username, password: PASSWORD })).body!.data as { token: string }).token;
  const phone = await rig.openPhone(undefined, `token=${encodeURIComponent(await login('ada'))}`);
  const { page } = phone;
  rig.fake.script({ text: 'Hello Ada.', chunks: 1 });
  await send(page, 'Ada asks');
  await page.locator('.message.assistant', { hasText: 'Hello Ada.' }).waitFor();
  const owner = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const rows = (await owner.request({ type: 'list_conversations' })).data as { conversations: { id: string; title: string }[] };
  const conversation = rows.conversations.find((c) => c.title === 'Ada asks')!;
  const bob = await TestClient.authed(rig.svc.wsUrl, await login('bob'));
  rig.fake.script({ text: 'Hello Bob.', chunks: 1 });
  await bob.request({ type: 'chat', conversation_id: conversation.id, message: 'Bob adds' }, 20_000);
  rig.fake.script({ text: 'Hello script.', chunks: 1 });
  await owner.request({ type: 'chat', conversation_id: conversation.id, message: 'A script adds' }, 20_000);
  await page.locator('.message.assistant', { hasText: 'Hello script.' }).waitFor();
  const senders = () => page.locator('.message.user').evaluateAll((nodes) => nodes.map((n) => `${n.querySelector('.plain')?.textContent} | ${n.querySelector('.message-from')?.textContent ?? ''}`));
  const expected = ['Ada asks | ', 'Bob adds | from bob', 'A script adds | from this computer'];
  assert.deepEqual(await senders(), expected, 'live');
  await shots(page, 'senders');
  await page.reload();
  await page.locator('.message.assistant', { hasText: 'Hello script.' }).waitFor();
  assert.deepEqual(await senders(), expected, 'after a reload');
  assert.doesNotMatch(await page.locator('body').innerText(), /access token/);
  bob.close();
  owner.close();
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a computer that refuses the phone: "Pair again" opens the way to pair, the box says it cannot send, a typed message is kept', async () => {
  const owner = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const devicesBefore = ((await owner.request({ type: 'list_devices' })).data as { devices: { device_id: string }[] }).devices.map((d) => d.device_id);
  const secret = ((await owner.request({ type: 'create_lan_pairing' })).data as { pairing_secret: string }).pairing_secret;
  const phone = await rig.openPhone(undefined, `pair=${encodeURIComponent(secret)}`);
  const { page } = phone;
  const devices = ((await owner.request({ type: 'list_devices' })).data as { devices: { device_id: string }[] }).devices;
  const added = devices.find((d) => !devicesBefore.includes(d.device_id))!;
  await owner.request({ type: 'revoke_device', device_id: added.device_id });
  const pairAgain = page.locator('.pair-again');
  await pairAgain.waitFor({ timeout: 15_000 });
  assert.match(await page.locator('.connection').innerText(), /refused/);
  assert.equal(await page.locator('.composer-input').getAttribute('placeholder'), 'Pair again to send');
  await send(page, 'kept for later');
  await page.locator('.message.user.pending', { hasText: 'kept for later' }).waitFor();
  await shots(page, 'refused');
  await pairAgain.click();
  await page.locator('.machines-panel').waitFor();
  await page.locator('#ra-add-link').waitFor();
  await shots(page, 'pair-again-open');
  owner.close();
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
