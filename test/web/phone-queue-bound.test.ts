/**
 * The phone, when its message is refused because the person's messages already waiting in line hold the bound
 * (s36, bound36; docs/design.md "The messages waiting in line are bounded"), in Debian's chromium against the
 * phone rig (the service with the fake OpenAI provider). The refusal (`rate_limited`) stored nothing: the page drew
 * the message as sent with an error under it and dropped its text and files (main); now its bubble goes, its text
 * and file come back to the message box with the service's words, and the outbox does not send it again (not
 * after a reconnect either). Screens under test-output/screens/queue-bound-*.png. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { MAX_QUEUED_MESSAGES_PER_PERSON } from '../../src/protocol';
import { saveScreens } from '../helpers/phone-screens';
import { TestClient } from '../helpers/ws-client';
import { attachTextFile, busyConversation, sendMessage, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

const SHOWN = '.machine-view:not([hidden])';
let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig();
});

after(async () => {
  await rig?.close();
});

test('a message refused because the person has the most messages waiting comes back to the box with its file, and is not sent again', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const { conversationId, open } = await busyConversation(rig, page);
  // A script with the token (the owner, as the paired phone is) fills the owner's bound behind a long turn.
  const script = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const running = script.request({ type: 'chat', conversation_id: conversationId, message: 'a long turn', stream: true }, 30_000);
  await page.locator(`${SHOWN} .composer .stop`).waitFor();
  const waiting = Array.from({ length: MAX_QUEUED_MESSAGES_PER_PERSON }, (_, i) =>
    script.request({ type: 'chat', conversation_id: conversationId, message: `scripted ${i}`, client_message_id: `scripted-${i}` }, 30_000),
  );
  await page.locator(`${SHOWN} .queued-preview`, { hasText: `scripted ${MAX_QUEUED_MESSAGES_PER_PERSON - 1}` }).waitFor();

  const TEXT = 'The photo of the error';
  await attachTextFile(phone, 'photo.txt', `photo ${randomUUID()}`);
  await sendMessage(page, TEXT);
  const note = page.locator(`${SHOWN} .note`, { hasText: 'Not sent:' });
  await note.waitFor();
  assert.match(await note.innerText(), new RegExp(`${MAX_QUEUED_MESSAGES_PER_PERSON} of your messages are already waiting.*remove one.*back in the message box`, 's'));
  assert.equal(await page.locator(`${SHOWN} .composer-input`).inputValue(), TEXT, 'the text is back');
  assert.equal(await page.locator(`${SHOWN} .attachment-chip[data-state="ready"]`).count(), 1, 'its file is back');
  assert.equal(await page.locator(`${SHOWN} .message.user`, { hasText: TEXT }).count(), 0, 'no bubble drawn as sent');
  await saveScreens(page, 'queue-bound-refused');

  // Not sent again: neither now nor once the connection comes back.
  const chatsOf = () => phone.sent.filter((f) => f.type === 'chat' && f.message === TEXT).length;
  await phone.context.setOffline(true);
  await page.locator(`${SHOWN} .connection[data-state="closed"]`).waitFor();
  await phone.context.setOffline(false);
  await page.locator(`${SHOWN} .connection[data-state="open"]`).waitFor({ timeout: 30_000 });
  assert.equal(chatsOf(), 1, 'sent once');

  // One taken out of the line (the person, from any device): Send puts it in line.
  assert.deepEqual((await script.request({ type: 'remove_queued', conversation_id: conversationId, client_message_id: 'scripted-0' })).data, { removed: true });
  await page.locator(`${SHOWN} .composer-input`).press('Enter');
  await page.locator(`${SHOWN} .queued-preview`, { hasText: TEXT }).waitFor();
  for (let i = 1; i < MAX_QUEUED_MESSAGES_PER_PERSON; i++) {
    await script.request({ type: 'remove_queued', conversation_id: conversationId, client_message_id: `scripted-${i}` });
  }
  await Promise.all(waiting);
  open();
  assert.equal((await running).status, 'ok');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: `echo: ${TEXT}` }).waitFor();
  script.close();
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
