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
import { sendMessage as send, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
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

/** The text of the element right after the user bubble holding `text` (what is said under it). */
function after_(page: Page, text: string): Promise<string> {
  return page.locator('.message.user', { hasText: text }).evaluate((node) => (node.nextElementSibling as HTMLElement | null)?.className ?? '');
}

/** The user bubbles' texts, in order. */
const userTexts = (page: Page) => page.locator('.message.user .plain').allInnerTexts();

async function openConversation(page: Page, title: string): Promise<void> {
  await page.locator('.drawer-toggle').click();
  await page.locator('.conversation-open', { hasText: title }).click();
}

test('a refused key is said under the message that failed; Retry answers that message again, in place: the model reads it once, the history holds it once and its reply', async () => {
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
  const asked = (rig.fake.requests[before].body as { messages: { role: string; content: unknown }[] }).messages;
  assert.equal(asked.filter((m) => m.role === 'user' && JSON.stringify(m.content).includes('This one fails')).length, 1, 'the model reads the message once');
  assert.equal(await page.locator('.turn-failure').count(), 0, 'the failure is no longer said once answered');
  assert.deepEqual(await userTexts(page), ['This one fails'], 'live: the message once');
  assert.match(await after_(page, 'This one fails'), /assistant/, 'its reply right under it');
  const retries = phone.sent.filter((f) => f.type === 'retry_turn');
  assert.equal(retries.length, 1);
  assert.equal(phone.sent.filter((f) => f.type === 'chat').length, 1, 'no second chat');
  await page.reload();
  await page.locator('.message.assistant', { hasText: 'Worked this time.' }).waitFor();
  assert.deepEqual(await userTexts(page), ['This one fails'], 'the history holds the message once');
  assert.match(await after_(page, 'This one fails'), /assistant/, 'and its reply after it');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a retry that fails again is said again, with Retry; the second Retry answers it', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script({ status: 401 });
  await send(page, 'Fails twice here');
  await page.locator('.turn-failure button.turn-retry').waitFor();
  rig.fake.script({ status: 401 });
  await page.locator('.turn-failure button.turn-retry').click();
  await page.locator('.turn-failure button.turn-retry').waitFor();
  assert.equal(await page.locator('.turn-failure').count(), 1, 'one notice for the message');
  rig.fake.script({ text: 'Second retry worked.', chunks: 1 });
  await page.locator('.turn-failure button.turn-retry').click();
  await page.locator('.message.assistant', { hasText: 'Second retry worked.' }).waitFor();
  assert.equal(await page.locator('.turn-failure').count(), 0);
  assert.deepEqual(await userTexts(page), ['Fails twice here']);
  const ids = phone.sent.filter((f) => f.type === 'retry_turn').map((f) => f.client_retry_id);
  assert.equal(ids.length, 2);
  assert.notEqual(ids[0], ids[1], 'each failure its own retry id');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("review24e: a chat's error answer that reaches the page before its turn.ended is said once, at the turn", async () => {
  // The socket's frames reordered: a failed turn.ended is held until the chat's error answer has gone first.
  const phone = await rig.openPhone(async (page) => {
    await page.routeWebSocket(/\/ws/, (ws) => {
      const server = ws.connectToServer();
      let held: string | undefined;
      server.onMessage((message) => {
        const text = String(message);
        const frame = JSON.parse(text) as { event?: string; outcome?: string; status?: string };
        if (frame.event === 'turn.ended' && frame.outcome === 'failed') {
          held = text;
          return;
        }
        ws.send(text);
        if (frame.status === 'error' && held) {
          ws.send(held);
          held = undefined;
        }
      });
    });
  });
  const { page } = phone;
  rig.fake.script({ status: 401 });
  await send(page, 'Answer first, end after');
  await page.locator('.turn-failure').waitFor();
  // The held turn.ended was sent right after the answer: let the page draw it.
  await page.locator('.turn-failure-text', { hasText: 'key was refused' }).waitFor();
  assert.equal(await page.locator('.turn-failure').count(), 1, 'one notice for the one failure');
  rig.fake.script({ text: 'Retried after the reorder.', chunks: 1 });
  await page.locator('.turn-failure button.turn-retry').click();
  await page.locator('.message.assistant', { hasText: 'Retried after the reorder.' }).waitFor();
  assert.deepEqual(await userTexts(page), ['Answer first, end after']);
  assert.equal(phone.sent.filter((f) => f.type === 'chat').length, 1, 'Retry answered the stored message, not a copy');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("the editor's view following the conversation shows the retried turn's reply; another page's failure notice goes once it is answered", async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script({ text: 'First answer.', chunks: 1 });
  await send(page, 'Seen from the editor too');
  await page.locator('.message.assistant', { hasText: 'First answer.' }).waitFor();
  const view = await rig.openEditorView();
  await openConversation(view.page, 'Seen from the editor too');
  await view.page.locator('.message.assistant', { hasText: 'First answer.' }).waitFor();
  const other = await rig.openPhone();
  await openConversation(other.page, 'Seen from the editor too');
  await other.page.locator('.message.assistant', { hasText: 'First answer.' }).waitFor();
  rig.fake.script({ status: 401 });
  await send(page, 'Then this fails');
  await page.locator('.turn-failure button.turn-retry').waitFor();
  await other.page.locator('.turn-failure').waitFor();
  assert.equal(await other.page.locator('.turn-failure button.turn-retry').count(), 0, "Retry only on the page's own message");
  rig.fake.script({ text: 'Reply for every view.', chunks: 1 });
  await page.locator('.turn-failure button.turn-retry').click();
  await view.page.locator('.message.assistant', { hasText: 'Reply for every view.' }).waitFor();
  await other.page.locator('.message.assistant', { hasText: 'Reply for every view.' }).waitFor();
  // turn.ended (answered, naming the message) comes right after the reply: the notice goes with it.
  await other.page.locator('.turn-failure').waitFor({ state: 'detached' });
  for (const shown of [view.page, other.page]) assert.deepEqual(await userTexts(shown), ['Seen from the editor too', 'Then this fails']);
  assert.deepEqual(phone.errors, []);
  assert.deepEqual(other.errors, []);
  await view.close();
  await other.close();
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
