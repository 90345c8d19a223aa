/**
 * A message's files survive a reload of the phone page (s36, idb36; docs/design.md "A message's files kept over a
 * reload"), in Debian's chromium against the phone rig (the service with the fake OpenAI provider). The file's chunks
 * are kept from the computer by the page's routed socket, so its upload still goes when the page reloads: its bytes
 * kept in IndexedDB, the message goes as written after the reload, nothing typed again, and the bytes go once it is
 * answered. The store deleted or too small to write in: upload36's put-back, with its note. queue35's upload again
 * after a `not_found` works after a reload too. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { downloadAttachment } from '../helpers/attachments';
import { saveScreens } from '../helpers/phone-screens';
import { TestClient } from '../helpers/ws-client';
import {
  keptFiles,
  pageUploads,
  pushOutUpload,
  reloadPhone,
  routedPhone,
  sendMessage,
  startConversation,
  startPhoneRig,
  storedUserMessages,
  waitUntil,
  sendWhileUploading,
  waitForKeptFiles,
  type PhoneRig,
  type StoredUserMessage,
} from '../helpers/phone-rig';

const SHOWN = '.machine-view:not([hidden])';
let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig();
});

after(async () => {
  await rig?.close();
});

test('a message sent while its file uploads goes as written after a reload, its file uploaded from the kept bytes, which then go', async () => {
  const { phone, frames } = await routedPhone(rig);
  const { page } = phone;
  await startConversation(rig, page, 'A conversation about the leak');
  const words = `leak ${randomUUID()}\n`;
  await sendWhileUploading(page, frames, words);
  await waitForKeptFiles(page, 1);

  // After the reload its upload is held once more, to see the page meanwhile.
  frames.hold = (frame) => frame.includes('"attachment_chunk"');
  await reloadPhone(page);
  await waitUntil(() => frames.held.length > 0, 'the file’s chunk, uploaded again');
  assert.equal(await page.locator(`${SHOWN} .message.user.pending`).count(), 2, 'both drawn waiting');
  assert.equal(await page.locator(`${SHOWN} .message.user.pending .upload-note`).innerText(), 'uploading leak-notes.txt…', 'its file said uploading under it');
  await saveScreens(page, 'upload-kept-resuming');
  frames.hold = undefined;
  frames.release();
  const stored = await sentAsWritten(page, 'A conversation about the leak');
  assert.equal(await page.locator(`${SHOWN} .composer-input`).inputValue(), '', 'nothing to type again');
  assert.equal(await page.locator(`${SHOWN} .attachment-chip[data-state="failed"]`).count(), 0);
  const client = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const bytes = await downloadAttachment((frame) => client.request(frame), stored[1].attachments![0].attachment_id);
  client.close();
  assert.equal(bytes.toString(), words, 'the file as attached');
  assert.equal(pageUploads(phone).length, 1, 'one upload finished: the one after the reload');
  await saveScreens(page, 'upload-kept-sent');
  await waitForKeptFiles(page, 0);
  await reloadPhone(page);
  assert.equal(await page.locator(`${SHOWN} .pending-note`).count(), 0, 'nothing waits');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('the kept bytes deleted before the reload (the store gone): the message comes back to the box with its note, nothing lost', async () => {
  const { phone, frames } = await routedPhone(rig);
  const { page } = phone;
  await startConversation(rig, page, 'A conversation about the drain');
  await sendWhileUploading(page, frames, `drain ${randomUUID()}\n`);
  await waitForKeptFiles(page, 1);
  await page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const gone = indexedDB.deleteDatabase('remote-assistant.files');
        gone.onsuccess = resolve;
        gone.onerror = reject;
      }),
  );

  await reloadPhone(page);
  await putBack(page);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('storage too small to keep the file (a quota forced small): the message comes back to the box with its note, nothing lost', async () => {
  const { phone, frames } = await routedPhone(rig, async (page) => {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: rig.site.url, quotaSize: 1024 });
  });
  const { page } = phone;
  await startConversation(rig, page, 'A conversation about the drain');
  // Larger than the quota: IndexedDB refuses it.
  await sendWhileUploading(page, frames, `drain ${randomUUID()} ${'x'.repeat(64 * 1024)}\n`);
  await page.waitForTimeout(300);
  assert.deepEqual(await keptFiles(page), [], 'not kept');

  await reloadPhone(page);
  await putBack(page);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

/**
 * Once answered, sendWhileUploading's two messages as the computer stored them, after the conversation's `first`: once
 * each, in order, the first with its file, and no note of anything not sent.
 */
async function sentAsWritten(page: Page, first: string, timeout?: number): Promise<StoredUserMessage[]> {
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: Is the pipe or the tap leaking?' }).waitFor({ timeout });
  assert.doesNotMatch(await page.locator(`${SHOWN} .messages`).innerText(), /Not sent|Not attached/);
  const stored = await storedUserMessages(rig, page);
  assert.deepEqual(
    stored.map((m) => [m.content, m.attachments?.map((a) => a.name) ?? []]),
    [
      [first, []],
      ['Here is what I saw under the sink', ['leak-notes.txt']],
      ['Is the pipe or the tap leaking?', []],
    ],
    'sent once each, in order, the first with its file',
  );
  return stored;
}

/** upload36's put-back: both texts in the box, the file on a failed chip, the note, nothing sent. */
async function putBack(page: Page): Promise<void> {
  assert.equal(await page.locator(`${SHOWN} .composer-input`).inputValue(), 'Here is what I saw under the sink\n\nIs the pipe or the tap leaking?');
  assert.match(await page.locator(`${SHOWN} .attachment-chip[data-state="failed"]`).innerText(), /leak-notes\.txt[\s\S]*attach it again/);
  assert.match(await page.locator(`${SHOWN} .messages`).innerText(), /Not sent: leak-notes\.txt was still uploading when the page closed[^\n]*Attach leak-notes\.txt again/);
  assert.equal(await page.locator(`${SHOWN} .message.user.pending`).count(), 0, 'nothing drawn waiting');
  assert.equal((await storedUserMessages(rig, page)).length, 1, 'nothing of it reached the computer');
}

test('after a reload, a message whose upload the computer let go is uploaded again from the kept bytes and sent with its file', async () => {
  const { phone, frames } = await routedPhone(rig);
  const { page } = phone;
  await startConversation(rig, page, 'A conversation for the plan');
  await page.locator(`${SHOWN} .attach-input`).setInputFiles({ name: 'plan.txt', mimeType: 'text/plain', buffer: Buffer.from(`plan ${randomUUID()}\n`) });
  await page.locator(`${SHOWN} .attachment-chip[data-state="ready"]`).waitFor();
  // The chat never reaches the computer before the reload (as if sent offline); meanwhile its upload is let go.
  frames.hold = (frame) => frame.includes('"type":"chat"');
  await sendMessage(page, 'Here is the plan');
  await waitUntil(() => frames.held.length > 0, 'the chat');
  await pushOutUpload(rig, pageUploads(phone)[0]);
  frames.hold = undefined;
  frames.held.length = 0;

  await reloadPhone(page);
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: Here is the plan' }).waitFor();
  assert.deepEqual(
    (await storedUserMessages(rig, page)).map((m) => [m.content, m.attachments?.map((a) => a.name) ?? []]),
    [
      ['A conversation for the plan', []],
      ['Here is the plan', ['plan.txt']],
    ],
  );
  assert.equal(pageUploads(phone).length, 2, 'uploaded again after the reload');
  assert.doesNotMatch(await page.locator(`${SHOWN} .messages`).innerText(), /Not sent/);
  await waitForKeptFiles(page, 0);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('the connection lost again while the kept file uploads after the reload: once back, the message still goes with its file', async () => {
  const { phone, frames } = await routedPhone(rig);
  const { page } = phone;
  await startConversation(rig, page, 'A conversation about the valve');
  await sendWhileUploading(page, frames, `valve ${randomUUID()}\n`);
  await waitForKeptFiles(page, 1);
  // After the reload, the computer's answer to the file's first attachment_begin is lost with the connection.
  let dropped = false;
  frames.onAnswer = (frame, route, server) => {
    if (dropped || !frame.includes('"chunk_size"')) return false;
    dropped = true;
    void route.close({ code: 1001, reason: 'gone' });
    void server.close({ code: 1001, reason: 'gone' });
    return true;
  };
  await page.reload();
  await waitUntil(() => dropped, 'the upload’s begin answered and the connection dropped');
  await sentAsWritten(page, 'A conversation about the valve', 30_000);
  await waitForKeptFiles(page, 0);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
