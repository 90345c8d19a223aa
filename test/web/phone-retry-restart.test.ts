/**
 * The phone's Retry resent to a service that restarted meanwhile (s27, resend27): the service answers
 * the resend `interrupted` (the restart cut that retry short; nothing runs again, no turn.ended comes).
 * The page says so under the message, with Retry under a new client_retry_id (a new retry, the person's
 * choice), and the composer is not left running. Before, the answer counted as sent: the notice went and
 * nothing came. The service's answer is played by `routeWebSocket` (the kill itself is
 * test/service/retry-turn-kill.test.ts's); real service, fake provider and chromium otherwise.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { sendMessage as send, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

let rig: PhoneRig;
before(async () => {
  rig = await startPhoneRig({ permission_mode: 'allow' });
});
after(async () => {
  await rig?.close();
});

test('a retry resent after a restart, answered interrupted, offers Retry again under a new id; that Retry asks the model', async () => {
  let answered = false;
  const ids: unknown[] = [];
  const phone = await rig.openPhone(async (page) => {
    await page.routeWebSocket(/\/ws/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { type?: string; id?: string; conversation_id?: string; client_retry_id?: string };
        if (frame.type === 'retry_turn') ids.push(frame.client_retry_id);
        if (frame.type === 'retry_turn' && !answered) {
          answered = true;
          ws.send(JSON.stringify({ status: 'ok', id: frame.id, data: { response: '', conversation_id: frame.conversation_id, interrupted: true } }));
          return;
        }
        server.send(message);
      });
      server.onMessage((message) => ws.send(message));
    });
  });
  const { page } = phone;
  rig.fake.script({ status: 401 });
  await send(page, 'Cut by a restart');
  const notice = page.locator('.turn-failure');
  await notice.locator('button.turn-retry').click();
  await page.locator('.turn-failure-text', { hasText: 'The computer restarted before this was answered.' }).waitFor();
  assert.equal(await notice.count(), 1, 'one notice');
  assert.equal(await page.locator('.composer .stop').isVisible(), false, 'the composer is not left running');
  // Looked at: the notice at the phone's width (test-output/screens).
  const screens = resolve('test-output/screens');
  await mkdir(screens, { recursive: true });
  await page.screenshot({ path: join(screens, 'retry-restart-notice.png') });

  const before = rig.fake.requests.length;
  rig.fake.script({ text: 'Answered after the restart.', chunks: 1 });
  await notice.locator('button.turn-retry').click();
  await page.locator('.message.assistant', { hasText: 'Answered after the restart.' }).waitFor();
  assert.equal(rig.fake.requests.length, before + 1, 'the model asked once');
  assert.equal(ids.length, 2);
  assert.notEqual(ids[0], ids[1], 'a new retry, not a resend of the interrupted one');
  assert.equal(await page.locator('.turn-failure').count(), 0);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
