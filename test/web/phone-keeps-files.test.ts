/**
 * The phone page loses nothing a person queued or put back (s35, queue35; docs/design.md "What the phone keeps
 * of a message not sent yet"), in Debian's chromium against the phone rig (the service with the fake OpenAI
 * provider): a file in the tray is there after a reload and goes with the message; context chips put back are
 * there after a reload; a message queued offline whose upload the computer let go meanwhile (the person's 20
 * newer uploads, MAX_UNSENT_ATTACHMENTS) is sent with its file from the page's own copy. Each failed on a build
 * of main first. Screens under test-output/screens/keeps-*.png. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ATTACHMENTS_FOLDER } from '../../src/agent/attachments/model-input';
import { MAX_UNSENT_ATTACHMENTS } from '../../src/protocol';
import { uploadAttachment } from '../helpers/attachments';
import { saveScreens } from '../helpers/phone-screens';
import {
  attachTextFile,
  busyConversation,
  waitForKeptFiles,
  queueForReload,
  routedPhone,
  reloadPhone,
  sendMessage,
  startConversation,
  startPhoneRig,
  pushOutUpload,
  storedUserMessages,
  withoutIndexedDB,
  type PhonePage,
  type PhoneRig,
} from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';

const SHOWN = '.machine-view:not([hidden])';
let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig();
});

after(async () => {
  await rig?.close();
});

const reload = reloadPhone;

/** Attaches a text file (uploaded while connected), then, offline, sends `text` with it: it waits in the outbox. */
async function sendWithFileOffline(phone: PhonePage, name: string, words: string, text: string): Promise<void> {
  const { page } = phone;
  await attachTextFile(phone, name, words);
  await phone.context.setOffline(true);
  await page.locator(`${SHOWN} .connection[data-state="closed"]`).waitFor();
  await sendMessage(page, text);
  await page.locator(`${SHOWN} .pending-note`).waitFor();
}

async function backOnline(phone: PhonePage): Promise<void> {
  await phone.context.setOffline(false);
  await phone.page.locator(`${SHOWN} .connection[data-state="open"]`).waitFor({ timeout: 30_000 });
}

/** Whether the model was told of the file `name` and finds `words` in it (a file is saved in the workspace, the model told where). */
async function modelReads(name: string, words: string): Promise<boolean> {
  const asked = JSON.stringify(rig.fake.requests.at(-1)?.body ?? '');
  const saved = new RegExp(`${ATTACHMENTS_FOLDER.replace('.', '\\.')}/[0-9a-f]{8}-${name.replace('.', '\\.')}`).exec(asked);
  if (!saved) return false;
  return (await readFile(join(rig.workspace.dir, saved[0]), 'utf8')).includes(words);
}

test('a file in the tray is there after a reload, and goes with the message', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const words = `tray words ${randomUUID()}`;
  const png = Buffer.from(
    await page.evaluate(() => {
      const canvas = document.createElement('canvas');
      canvas.width = canvas.height = 64;
      const context = canvas.getContext('2d')!;
      context.fillStyle = '#2a7';
      context.fillRect(0, 0, 64, 64);
      return canvas.toDataURL('image/png').split(',')[1];
    }),
    'base64',
  );
  await page.locator(`${SHOWN} .attach-input`).setInputFiles([
    { name: 'tray-notes.txt', mimeType: 'text/plain', buffer: Buffer.from(`${words}\n`) },
    { name: 'whiteboard.png', mimeType: 'image/png', buffer: png },
  ]);
  await page.locator(`${SHOWN} .attachment-chip[data-state="ready"]`).nth(1).waitFor();
  await page.locator(`${SHOWN} .composer-input`).fill('About the notes');
  await reload(page);
  const chips = page.locator(`${SHOWN} .attachment-chip[data-state="ready"]`);
  await chips.nth(1).waitFor();
  assert.deepEqual(await page.locator(`${SHOWN} .attachment-chip .attachment-name`).allInnerTexts(), ['tray-notes.txt', 'whiteboard.jpg'], 'the chips name their files, in order');
  // The picture's thumbnail, read back from the computer.
  await page.waitForFunction(() => document.querySelector<HTMLImageElement>('.machine-view:not([hidden]) .attachment-chip .attachment-chip-image')?.src.startsWith('data:image/jpeg'));
  await saveScreens(page, 'keeps-tray-reloaded');
  await page.locator(`${SHOWN} .composer-input`).press('Enter');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: About the notes' }).waitFor();
  const [stored] = await storedUserMessages(rig, page);
  assert.deepEqual(
    stored.attachments?.map((a) => a.name),
    ['tray-notes.txt', 'whiteboard.jpg'],
    'the message carries the files',
  );
  assert.ok(await modelReads('tray-notes.txt', words), 'the model read the file');
  assert.equal(await page.locator(`${SHOWN} .attachment-chip`).count(), 0, 'the tray is empty once sent');
  await reload(page);
  assert.equal(await page.locator(`${SHOWN} .attachment-chip`).count(), 0, 'and stays empty after a reload');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('context chips put back are there after a reload, and go with the message', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const TEXT = 'Why does this loop stop early?';
  const context = [{ kind: 'selection', path: 'src/loop.ts', range: { start_line: 3, end_line: 5 }, text: 'for (let i = 0; i < n - 1; i++) {\n  total += i;\n}' }];
  // Queued before a reload for a conversation deleted meanwhile: its text and chips come back to the box.
  // (Typing keeps the box under the machine's prefix: the outbox goes beside it.)
  await page.locator(`${SHOWN} .composer-input`).fill('x');
  await page.locator(`${SHOWN} .composer-input`).fill('');
  await queueForReload(page, [{ client_message_id: 'queue35-chips', text: TEXT, context, conversation_id: `gone-${randomUUID()}` }]);

  await reload(page);
  await page.waitForFunction((text) => document.querySelector<HTMLTextAreaElement>('.machine-view:not([hidden]) .composer-input')?.value === text, TEXT);
  await page.locator(`${SHOWN} .context-chips:not(.sent) .chip`, { hasText: 'loop.ts:3-5' }).waitFor();
  await reload(page);
  const chip = page.locator(`${SHOWN} .context-chips:not(.sent) .chip`);
  await chip.first().waitFor();
  assert.deepEqual(await page.locator(`${SHOWN} .context-chips:not(.sent) .chip-label`).allInnerTexts(), ['loop.ts:3-5'], 'the chip put back is there after the reload');
  await saveScreens(page, 'keeps-chips-reloaded');
  await page.locator(`${SHOWN} .composer-input`).press('Enter');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo:' }).waitFor();
  const [stored] = await storedUserMessages(rig, page);
  assert.deepEqual(
    stored.context?.map((c) => c.path),
    ['src/loop.ts'],
    'the message carries the chip',
  );
  await reload(page);
  assert.equal(await page.locator(`${SHOWN} .context-chips:not(.sent) .chip`).count(), 0, 'sent, the chips are not kept');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a message queued offline whose upload the computer let go is sent with its file, from the page’s copy', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await startConversation(rig, page, 'A conversation for the plan');
  const words = `plan words ${randomUUID()}`;
  const TEXT = 'Here is the plan';
  await sendWithFileOffline(phone, 'plan.txt', words, TEXT);
  assert.equal(phone.sent.filter((f) => f.type === 'attachment_end').length, 1);
  // Meanwhile the same person (the owner, on the computer or another phone) finishes 20 uploads: the plan's goes.
  await pushOutUpload(rig, (phone.sent.find((f) => f.type === 'attachment_end') as { attachment_id: string }).attachment_id);

  await backOnline(phone);
  await page.locator(`${SHOWN} .message.assistant`, { hasText: `echo: ${TEXT}` }).waitFor();
  const stored = await storedUserMessages(rig, page);
  assert.deepEqual(
    stored.map((m) => [m.content, m.attachments?.map((a) => a.name) ?? []]),
    [
      ['A conversation for the plan', []],
      [TEXT, ['plan.txt']],
    ],
    'the message is stored once, with its file',
  );
  assert.ok(await modelReads('plan.txt', words), 'the model read the file');
  assert.equal(phone.sent.filter((f) => f.type === 'attachment_end').length, 2, 'uploaded again from the page’s copy');
  assert.equal(await page.locator(`${SHOWN} .composer-input`).inputValue(), '', 'nothing was put back');
  assert.doesNotMatch(await page.locator(`${SHOWN} .messages`).innerText(), /Not sent/);
  assert.equal(await page.locator(`${SHOWN} .message.user`, { hasText: TEXT }).count(), 1, 'one bubble for it');
  await saveScreens(page, 'keeps-sent-again');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a message with a file, waiting offline for a conversation deleted meanwhile, comes back with its file in the tray', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const conversationId = await startConversation(rig, page, 'A conversation to delete');
  const TEXT = 'The diagram for the retry loop';
  await sendWithFileOffline(phone, 'diagram.txt', `diagram ${randomUUID()}`, TEXT);
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  assert.equal((await other.request({ type: 'delete_conversation', conversation_id: conversationId })).status, 'ok');
  other.close();
  await backOnline(phone);
  await page.waitForFunction((text) => document.querySelector<HTMLTextAreaElement>('.machine-view:not([hidden]) .composer-input')?.value === text, TEXT);
  const chip = page.locator(`${SHOWN} .attachment-chip[data-state="ready"]`);
  await chip.waitFor();
  assert.match(await chip.innerText(), /diagram\.txt/, 'its file is back in the tray');
  const note = await page.locator(`${SHOWN} .messages`).innerText();
  assert.match(note, /Not sent: its conversation was deleted meanwhile\. What you typed and its file are back in the message box\./);
  assert.doesNotMatch(note, /Attach/, 'nothing to attach again');
  await saveScreens(page, 'keeps-deleted-back');
  await page.locator(`${SHOWN} .composer-input`).press('Enter');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: `echo: ${TEXT}` }).waitFor();
  const [stored] = await storedUserMessages(rig, page);
  assert.deepEqual([stored.content, stored.attachments?.map((a) => a.name)], [TEXT, ['diagram.txt']], 'sent into a new chat with its file');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a file that would push out a file of a message waiting in line is refused on its chip, before anything is lost', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  // A long turn (the fake holds it open), and the same person's two messages waiting behind it with the bound's worth of files.
  const { conversationId, open } = await busyConversation(rig, page, { text: 'One.' }, { text: 'Two.' });
  const clients = await Promise.all([0, 1, 2, 3].map(() => TestClient.authed(rig.svc.wsUrl, rig.svc.token)));
  const running = clients[0].request({ type: 'chat', conversation_id: conversationId, message: 'a long turn', stream: true }, 30_000);
  const files: string[] = [];
  for (let i = 0; i < MAX_UNSENT_ATTACHMENTS; i++) {
    const done = await uploadAttachment((frame) => clients[3].request(frame), Buffer.from(`photo ${i} ${randomUUID()}`), `photo-${i}.txt`, 'text/plain');
    files.push((done.data as { attachment_id: string }).attachment_id);
  }
  const waiting = [
    clients[1].request({ type: 'chat', conversation_id: conversationId, message: 'the first ten', attachments: files.slice(0, 10), client_message_id: 'queue35-ten-1' }, 30_000),
    clients[2].request({ type: 'chat', conversation_id: conversationId, message: 'the next ten', attachments: files.slice(10), client_message_id: 'queue35-ten-2' }, 30_000),
  ];
  await page.locator(`${SHOWN} .queue`, { hasText: 'the next ten' }).waitFor();

  await page.locator(`${SHOWN} .attach-input`).setInputFiles({ name: 'one-more.txt', mimeType: 'text/plain', buffer: Buffer.from('one more\n') });
  const chip = page.locator(`${SHOWN} .attachment-chip[data-state="failed"]`);
  await chip.waitFor();
  assert.match(await chip.innerText(), /20 of your files wait in queued messages/, 'the chip says why');
  await saveScreens(page, 'keeps-refused');
  for (const id of files) assert.equal((await clients[3].request({ type: 'get_attachment', attachment_id: id })).status, 'ok', 'every waiting file is still there');
  open();
  for (const answer of [running, ...waiting]) assert.equal((await answer).status, 'ok');
  for (const client of clients) client.close();
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('without IndexedDB, a file still uploading when the page closes comes back named on a failed chip, and the message says it was not attached', async () => {
  // The page's socket, through a route that keeps the file's chunks from the computer; no IndexedDB to keep its bytes in.
  const { phone, frames } = await routedPhone(rig, withoutIndexedDB);
  frames.hold = (frame) => frame.includes('"attachment_chunk"');
  const { page } = phone;
  await page.locator(`${SHOWN} .attach-input`).setInputFiles({ name: 'big-photo-notes.txt', mimeType: 'text/plain', buffer: Buffer.from('still uploading\n') });
  await page.locator(`${SHOWN} .attachment-chip[data-state="uploading"]`).waitFor();
  await page.waitForFunction(() => !!Object.keys(localStorage).find((k) => k.endsWith('/remote-assistant.tray') && localStorage.getItem(k)?.includes('big-photo-notes.txt')));
  frames.hold = undefined;
  await reload(page);
  const chip = page.locator(`${SHOWN} .attachment-chip[data-state="failed"]`);
  await chip.waitFor();
  assert.match(await chip.innerText(), /big-photo-notes\.txt[\s\S]*not uploaded before the page closed: attach it again/, 'the chip names the file and says what happened');
  await saveScreens(page, 'keeps-unfinished');
  await reload(page);
  await chip.waitFor();
  assert.equal(await chip.count(), 1, 'kept until the person acts on it');
  await sendMessage(page, 'The notes, unless they are missing');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: The notes, unless they are missing' }).waitFor();
  assert.match(await page.locator(`${SHOWN} .messages`).innerText(), /Not attached: big-photo-notes\.txt \(not uploaded before the page closed/, 'the message says the file did not go');
  await reload(page);
  assert.equal(await page.locator(`${SHOWN} .attachment-chip`).count(), 0, 'sent: the tray is empty');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a file still uploading when the page closes finishes uploading by itself after the reload, from its kept bytes, and goes with the message', async () => {
  // Before idb36 (bytes in memory only) this was the test above, with IndexedDB: its chip said "attach it again".
  const { phone, frames } = await routedPhone(rig);
  frames.hold = (frame) => frame.includes('"attachment_chunk"');
  const { page } = phone;
  const words = `still uploading ${randomUUID()}`;
  await page.locator(`${SHOWN} .attach-input`).setInputFiles({ name: 'big-photo-notes.txt', mimeType: 'text/plain', buffer: Buffer.from(`${words}\n`) });
  await page.locator(`${SHOWN} .attachment-chip[data-state="uploading"]`).waitFor();
  await page.waitForFunction(() => !!Object.keys(localStorage).find((k) => k.endsWith('/remote-assistant.tray') && localStorage.getItem(k)?.includes('big-photo-notes.txt')));
  await waitForKeptFiles(page, 1);
  frames.hold = undefined;
  frames.held.length = 0;
  await reload(page);
  const chip = page.locator(`${SHOWN} .attachment-chip[data-state="ready"]`);
  await chip.waitFor();
  assert.match(await chip.innerText(), /big-photo-notes\.txt/);
  await saveScreens(page, 'keeps-unfinished-resumed');
  await sendMessage(page, 'The notes, all of them');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'echo: The notes, all of them' }).waitFor();
  assert.doesNotMatch(await page.locator(`${SHOWN} .messages`).innerText(), /Not attached/);
  assert.ok(await modelReads('big-photo-notes.txt', words), 'the model read the file');
  await reload(page);
  assert.equal(await page.locator(`${SHOWN} .attachment-chip`).count(), 0, 'sent: the tray is empty');
  await waitForKeptFiles(page, 0);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
