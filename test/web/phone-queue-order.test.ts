/**
 * The phone's queued messages reach the agent in the order the person wrote them (s36, queue36; docs/design.md
 * "The phone's queued messages keep their order"), in Debian's chromium against the phone rig (the service with the
 * fake OpenAI provider). A message whose upload the computer let go (the person's 20 newer uploads,
 * MAX_UNSENT_ATTACHMENTS) is uploaded again from the page's copy and sent in its place, before those typed after it
 * (it went behind them: failed on main); sent again once only (a second `not_found` puts it back with its file); and
 * the connection lost between the `not_found` and the upload loses nothing and sends nothing twice; and held behind a
 * message with a file, the next joins the computer's queue as soon as that one does. Screens under
 * test-output/screens/order-*.png. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { saveScreens } from '../helpers/phone-screens';
import { TestClient } from '../helpers/ws-client';
import {
  attachTextFile,
  busyConversation,
  pageUploads,
  pushOutUpload,
  routedPhone,
  sendMessage,
  startConversation,
  startPhoneRig,
  storedUserMessages,
  waitUntil,
  type PhonePage,
  type PhoneRig,
} from '../helpers/phone-rig';

const SHOWN = '.machine-view:not([hidden])';
let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig();
});

after(async () => {
  await rig?.close();
});

/** The chat frames the page sent, as [text, client_message_id]. */
function chats(phone: PhonePage): [string, string][] {
  return phone.sent.filter((f) => f.type === 'chat').map((f) => [String(f.message), String(f.client_message_id)]);
}

/** The number of the model's first request that holds `text` (each turn's request carries the conversation so far). */
function firstAsked(text: string): number {
  return rig.fake.requests.findIndex((r) => JSON.stringify(r.body).includes(text));
}

test('a message whose upload went while it waited offline is sent before the one typed after it', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await startConversation(rig, page, 'A conversation for the plan');
  const planId = await attachTextFile(phone, 'plan.txt', `plan words ${randomUUID()}`);
  await phone.context.setOffline(true);
  await page.locator(`${SHOWN} .connection[data-state="closed"]`).waitFor();
  await sendMessage(page, 'Here is the plan');
  await sendMessage(page, 'Start with its second step');
  await page.locator(`${SHOWN} .pending-note`).nth(1).waitFor();
  await pushOutUpload(rig, planId);

  await phone.context.setOffline(false);
  await page.locator(`${SHOWN} .connection[data-state="open"]`).waitFor({ timeout: 30_000 });
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: Start with its second step' }).waitFor();
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: Here is the plan' }).waitFor();
  const stored = await storedUserMessages(rig, page);
  assert.deepEqual(
    stored.map((m) => [m.content, m.attachments?.map((a) => a.name) ?? []]),
    [
      ['A conversation for the plan', []],
      ['Here is the plan', ['plan.txt']],
      ['Start with its second step', []],
    ],
    'stored in the order written, each once, the plan with its file',
  );
  assert.ok(firstAsked('Here is the plan') < firstAsked('Start with its second step'), 'the model asked in that order');
  assert.deepEqual(
    await page.locator(`${SHOWN} .message.user`).allInnerTexts(),
    ['A conversation for the plan', 'Here is the plan\nplan.txt · 48 B', 'Start with its second step'],
    'one bubble each, in order, the plan’s with its file',
  );
  assert.equal(pageUploads(phone).length, 2, 'uploaded again once, from the page’s copy');
  assert.equal(await page.locator(`${SHOWN} .composer-input`).inputValue(), '', 'nothing was put back');
  await saveScreens(page, 'order-kept');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a message typed while the one before it still uploads its file goes after it', async () => {
  const { phone, frames } = await routedPhone(rig);
  const { page } = phone;
  await startConversation(rig, page, 'A conversation for the photo');
  // The photo's chunks kept from the computer: it is still uploading when both are sent.
  frames.hold = (frame) => frame.includes('"attachment_chunk"');
  await page.locator(`${SHOWN} .attach-input`).setInputFiles({ name: 'photo-notes.txt', mimeType: 'text/plain', buffer: Buffer.from(`photo ${randomUUID()}\n`) });
  await page.locator(`${SHOWN} .attachment-chip[data-state="uploading"]`).waitFor();
  await sendMessage(page, 'Here is the photo');
  await sendMessage(page, 'Why is it red?');
  await waitUntil(() => frames.held.length > 0, 'the photo’s chunk');
  assert.deepEqual(await page.locator(`${SHOWN} .message.user.pending`).allInnerTexts(), ['Here is the photo', 'Why is it red?'], 'both drawn waiting, in order');
  await saveScreens(page, 'order-uploading');
  frames.hold = undefined;
  frames.release();
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: Why is it red?' }).waitFor();
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: Here is the photo' }).waitFor();
  assert.deepEqual(
    (await storedUserMessages(rig, page)).map((m) => [m.content, m.attachments?.map((a) => a.name) ?? []]),
    [
      ['A conversation for the photo', []],
      ['Here is the photo', ['photo-notes.txt']],
      ['Why is it red?', []],
    ],
    'stored in the order sent',
  );
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a message whose file still uploads goes to the conversation it was typed in, whatever is on screen when the upload ends', async () => {
  const { phone, frames } = await routedPhone(rig);
  const { page } = phone;
  const conversationId = await startConversation(rig, page, 'A conversation for the receipt');
  frames.hold = (frame) => frame.includes('"attachment_chunk"');
  await page.locator(`${SHOWN} .attach-input`).setInputFiles({ name: 'receipt.txt', mimeType: 'text/plain', buffer: Buffer.from(`receipt ${randomUUID()}\n`) });
  await page.locator(`${SHOWN} .attachment-chip[data-state="uploading"]`).waitFor();
  await sendMessage(page, 'The receipt for March');
  await waitUntil(() => frames.held.length > 0, 'the receipt’s chunk');
  // Before the upload ends, the person opens a new chat.
  await page.locator(`${SHOWN} .drawer-toggle`).click();
  await page.locator(`${SHOWN} .new-chat`).click();
  await page.locator(`${SHOWN} .messages`, { hasText: 'Start a conversation' }).waitFor();
  frames.hold = undefined;
  frames.release();
  await rig.fake.waitFor((requests) => requests.some((r) => JSON.stringify(r.body).includes('The receipt for March')));
  const client = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const listed = (await client.request({ type: 'list_conversations' })).data as { conversations: { id: string }[] };
  const stored = (await client.request({ type: 'get_messages', conversation_id: conversationId })).data as { messages: { role: string; content: string; attachments?: { name: string }[] }[] };
  client.close();
  assert.deepEqual(
    stored.messages.filter((m) => m.role === 'user').map((m) => [m.content, m.attachments?.map((a) => a.name) ?? []]),
    [
      ['A conversation for the receipt', []],
      ['The receipt for March', ['receipt.txt']],
    ],
    'stored where it was typed, with its file',
  );
  assert.ok(!listed.conversations.some((c) => c.id !== conversationId && JSON.stringify(c).includes('receipt for March')), 'no new conversation made of it');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('behind a running turn, the message typed after one with a file joins the queue at once, not when the turn ends', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const { conversationId, open } = await busyConversation(rig, page);
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const running = other.request({ type: 'chat', conversation_id: conversationId, message: 'a long turn', stream: true }, 30_000);
  await page.locator(`${SHOWN} .composer .stop`).waitFor();
  await attachTextFile(phone, 'photo.txt', `photo ${randomUUID()}`);
  await sendMessage(page, 'The photo of the error');
  await sendMessage(page, 'It happens on every start');
  // Both wait in the computer's queue (seen and removable on every device) while the long turn runs.
  await page.locator(`${SHOWN} .queue`, { hasText: 'It happens on every start' }).waitFor();
  assert.deepEqual(await page.locator(`${SHOWN} .queued-preview`).allInnerTexts(), ['The photo of the error', 'It happens on every start']);
  open();
  assert.equal((await running).status, 'ok');
  other.close();
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: It happens on every start' }).waitFor();
  assert.deepEqual(
    (await storedUserMessages(rig, page)).map((m) => [m.content, m.attachments?.map((a) => a.name) ?? []]),
    [
      ['A conversation that will be busy', []],
      ['a long turn', []],
      ['The photo of the error', ['photo.txt']],
      ['It happens on every start', []],
    ],
  );
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a message sent again goes once: its upload gone again, its text and file come back with the note', async () => {
  const { phone, frames } = await routedPhone(rig);
  const { page } = phone;
  await startConversation(rig, page, 'A conversation for the photo notes');
  const TEXT = 'The notes from the whiteboard';
  const notesId = await attachTextFile(phone, 'notes.txt', `notes ${randomUUID()}`);
  await pushOutUpload(rig, notesId);
  // The chat sent again (a new client_message_id) is kept back until its new upload is let go too.
  let firstId: string | undefined;
  frames.hold = (frame) => {
    if (!frame.includes('"type":"chat"') || !frame.includes(TEXT)) return false;
    firstId ??= (JSON.parse(frame) as { client_message_id: string }).client_message_id;
    return !frame.includes(firstId);
  };
  await sendMessage(page, TEXT);
  await waitUntil(() => frames.held.length === 1, 'the message sent again');
  assert.equal(pageUploads(phone).length, 2, 'uploaded again from the page’s copy');
  // Meanwhile its bubble waits where it was written.
  assert.deepEqual(await page.locator(`${SHOWN} .message.user.pending`).allInnerTexts(), [`${TEXT}\nnotes.txt · 43 B`], 'one bubble, still pending');
  await saveScreens(page, 'order-resending');
  await pushOutUpload(rig, pageUploads(phone)[1]);
  frames.hold = undefined;
  frames.release();

  await page.waitForFunction((text) => document.querySelector<HTMLTextAreaElement>('.machine-view:not([hidden]) .composer-input')?.value === text, TEXT);
  const chip = page.locator(`${SHOWN} .attachment-chip[data-state="ready"]`);
  await chip.waitFor();
  assert.match(await chip.innerText(), /notes\.txt/, 'its file is back in the tray');
  assert.match(await page.locator(`${SHOWN} .messages`).innerText(), /Not sent: an attached file is no longer available\. What you typed and its file are back in the message box\./);
  assert.deepEqual(chats(phone).filter(([text]) => text === TEXT).length, 2, 'sent, then sent again once: not a third time');
  assert.equal(await page.locator(`${SHOWN} .message.user`, { hasText: TEXT }).count(), 0, 'no bubble left waiting');
  assert.ok(await page.locator(`${SHOWN} .composer .stop`).isHidden(), 'nothing runs: no Stop');
  assert.deepEqual(
    (await storedUserMessages(rig, page)).map((m) => m.content),
    ['A conversation for the photo notes'],
    'nothing stored',
  );
  await saveScreens(page, 'order-once');
  // The file put back is ready: Send takes it.
  await page.locator(`${SHOWN} .composer-input`).press('Enter');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: `echo: ${TEXT}` }).waitFor();
  const last = (await storedUserMessages(rig, page)).at(-1);
  assert.deepEqual([last?.content, last?.attachments?.map((a) => a.name)], [TEXT, ['notes.txt']]);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('the connection lost between the not_found and the upload: once back, the message goes once, with its file, before the next', async () => {
  const { phone, frames } = await routedPhone(rig);
  const { page } = phone;
  await startConversation(rig, page, 'A conversation for the sketch');
  const FIRST = 'The sketch of the login screen';
  const NEXT = 'Make the button bigger';
  const sketchId = await attachTextFile(phone, 'sketch.txt', `sketch ${randomUUID()}`);
  await pushOutUpload(rig, sketchId);
  // Both chats kept back until both are typed (what the page sends of them meanwhile), then let through.
  frames.hold = (frame) => frame.includes('"type":"chat"');
  await sendMessage(page, FIRST);
  await sendMessage(page, NEXT);
  await page.locator(`${SHOWN} .message.user`, { hasText: NEXT }).waitFor();
  // The computer's not_found reaches the page, and the connection drops at once (before the upload can start).
  let dropped = false;
  frames.onAnswer = (frame, route, server) => {
    if (dropped || !frame.includes('"code":"not_found"')) return false;
    dropped = true;
    route.send(frame);
    void route.close({ code: 1001, reason: 'gone' });
    void server.close({ code: 1001, reason: 'gone' });
    return true;
  };
  frames.hold = undefined;
  frames.release();
  await waitUntil(() => dropped, 'the not_found answered and the connection dropped');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: `echo: ${NEXT}` }).waitFor({ timeout: 30_000 });
  await page.locator(`${SHOWN} .message.assistant`, { hasText: `echo: ${FIRST}` }).waitFor();
  const stored = await storedUserMessages(rig, page);
  assert.deepEqual(
    stored.map((m) => [m.content, m.attachments?.map((a) => a.name) ?? []]),
    [
      ['A conversation for the sketch', []],
      [FIRST, ['sketch.txt']],
      [NEXT, []],
    ],
    'each stored once, in order, the first with its file',
  );
  assert.equal(pageUploads(phone).length, 2, 'uploaded again once');
  assert.equal(await page.locator(`${SHOWN} .composer-input`).inputValue(), '', 'nothing put back');
  assert.equal(await page.locator(`${SHOWN} .message.user`, { hasText: FIRST }).count(), 1, 'one bubble for it');
  assert.doesNotMatch(await page.locator(`${SHOWN} .messages`).innerText(), /Not sent/);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
