// The phone's Retry after a retry whose answer was lost with the connection, though its turn.ended
// (failed) reached the page: the notice turn.ended drew (with a new client_retry_id) stands. Before the
// fix the lost outcome put the OLD retry back in it (an id the service remembers as failed): the next
// tap resent it, got the old server_error, the notice went and the model was never asked (found by
// review25b, s25; this test failed then).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sendMessage as send, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

let rig: PhoneRig;
before(async () => {
  rig = await startPhoneRig({ permission_mode: 'allow' });
});
after(async () => {
  await rig?.close();
});

test('Retry tapped after a failed retry whose answer was lost asks the model again', async () => {
  let retryId: string | undefined;
  let cut = false;
  const phone = await rig.openPhone(async (page) => {
    await page.routeWebSocket(/\/ws/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { type?: string; id?: string };
        if (frame.type === 'retry_turn' && retryId === undefined) retryId = frame.id;
        server.send(message);
      });
      server.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { id?: string; status?: string };
        if (!cut && retryId !== undefined && frame.id === retryId && frame.status !== undefined) {
          // The answer is lost with the connection (turn.ended, sent before it, arrived).
          cut = true;
          ws.close();
          server.close();
          return;
        }
        ws.send(message);
      });
    });
  });
  const { page } = phone;
  rig.fake.script({ status: 401 });
  await send(page, 'Lost answer then retry');
  await page.locator('.turn-failure button.turn-retry').waitFor();
  rig.fake.script({ status: 401 });
  await page.locator('.turn-failure button.turn-retry').click();
  await page.waitForFunction(() => true);
  for (let i = 0; i < 100 && !cut; i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(cut, 'the retry answer was cut');
  // Reconnected (a follow again after the cut).
  await new Promise((r) => setTimeout(r, 3_000));
  await page.locator('.turn-failure button.turn-retry').waitFor();
  const before = rig.fake.requests.length;
  rig.fake.script({ text: 'Third try worked.', chunks: 1 });
  await page.locator('.turn-failure button.turn-retry').click();
  await new Promise((r) => setTimeout(r, 2_000));
  // The second tap sent the id its notice drew, not the lost retry's again (the service remembers that one failed).
  const ids = phone.sent.filter((f) => f.type === 'retry_turn').map((f) => f.client_retry_id);
  assert.ok(ids.length >= 2 && ids.at(-1) !== ids.at(0), `a new client_retry_id for the second tap: ${JSON.stringify(ids)}`);
  assert.equal(rig.fake.requests.length, before + 1, 'the tap asked the model again');
  await page.locator('.message.assistant', { hasText: 'Third try worked.' }).waitFor({ timeout: 2_000 });
  await phone.close();
});
