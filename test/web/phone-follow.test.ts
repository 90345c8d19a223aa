/**
 * The phone page as a full peer (issue 12, page side: src/web/chat/app.ts, outbox.ts, banner.ts), against
 * real parts: the service in process with the fake OpenAI provider, media/ served by a static server,
 * Debian's chromium (playwright-core) at a phone's size. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { FakeOpenAI } from '../helpers/fake-openai';
import { machineItem, startPhoneRig, type PhonePage, type PhoneRig } from '../helpers/phone-rig';
import type { RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';
import { waitFor } from '../helpers/temp';
import { withoutNote } from '../helpers/service-note';

let rig: PhoneRig;
let fake: FakeOpenAI;
let svc: RunningService;
let browser: PhoneRig['browser'];

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'allow' });
  ({ fake, svc, browser } = rig);
});

after(async () => {
  await rig?.close();
});

/** A phone with a fresh browser profile, paired through the URL fragment; `beforeGoto` may route its socket. */
const openPhone = (beforeGoto?: (page: Page) => Promise<void>): Promise<PhonePage> => rig.openPhone(beforeGoto);

async function openConversation(page: Page, title: string): Promise<void> {
  await page.locator('.drawer-toggle').click();
  await page.locator('.conversation-open', { hasText: title }).click();
}

/** The page's transcript as shown: each user or assistant bubble's text (its notes left out). */
function transcript(page: Page): Promise<string[]> {
  return page.locator('.message-list > .message').evaluateAll((nodes) => nodes.map((n) => ((n.querySelector('.plain, .markdown') as HTMLElement | null)?.innerText ?? '').trim()));
}

async function storedTranscript(conversationId: string): Promise<string[]> {
  const probe = await TestClient.authed(svc.wsUrl, svc.token);
  const answer = await probe.request({ type: 'get_messages', conversation_id: conversationId });
  probe.close();
  return (answer.data as { messages: { content: string }[] }).messages.map((m) => m.content);
}

async function goOffline(phone: PhonePage): Promise<void> {
  await phone.context.setOffline(true);
  // As long as going online may take: under a full run's load the page took over 10 s to show it.
  await phone.page.locator('.connection:not([data-state="open"])').waitFor({ timeout: 20_000 });
}

async function goOnline(phone: PhonePage): Promise<void> {
  await phone.context.setOffline(false);
  await phone.page.locator('.connection[data-state="open"]').waitFor({ timeout: 20_000 });
}

test('the page follows a streamed reply sent by another client, and after a drop mid-stream ends with the same text, no piece twice', async () => {
  const other = await TestClient.authed(svc.wsUrl, svc.token);
  const first = await other.request({ type: 'chat', message: 'a conversation started on the LAN' });
  const conversationId = (first.data as { conversation_id: string }).conversation_id;
  const phone = await openPhone();
  const { page } = phone;
  await openConversation(page, 'a conversation started on the LAN');
  await page.waitForFunction(() => (document.querySelector('.message-list')?.textContent ?? '').includes('echo: a conversation started on the LAN'));
  // Once the page follows, every text the reply bubble ever shows is recorded: a piece drawn twice
  // would make one of them stop being a prefix of the reply.
  const followed = phone.sent.find((f) => f.type === 'follow_conversation' && f.conversation_id === conversationId);
  assert.ok(followed, 'the page follows the conversation it shows');
  await page.evaluate(() => {
    const seen: string[] = ((window as unknown as { __seen: string[] }).__seen = []);
    const before = document.querySelectorAll('.message.assistant').length;
    new MutationObserver(() => {
      const replies = document.querySelectorAll('.message.assistant');
      const last = replies[replies.length - 1] as HTMLElement | undefined;
      // The reply's text (its usage line, drawn once it is stored, is not part of it).
      if (last && replies.length > before) seen.push((last.querySelector('.markdown') as HTMLElement).innerText.trim());
    }).observe(document.querySelector('.message-list')!, { childList: true, subtree: true, characterData: true });
  });

  const reply = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
  fake.script({ text: reply, chunks: 40, chunkDelayMs: 60 });
  const answer = other.request({ type: 'chat', conversation_id: conversationId, message: 'stream it to every device', stream: true }, 20_000);
  await page.waitForFunction(() => / word5\b/.test(document.querySelector('.message.assistant.streaming')?.textContent ?? ''));
  assert.equal(await page.locator('.message.user .plain').last().innerText(), 'stream it to every device', 'the message sent elsewhere is shown');

  // The page's socket drops mid-stream (the network goes away), then comes back.
  await goOffline(phone);
  const shownWhileOffline = await page.locator('.message.assistant').last().innerText();
  await page.waitForTimeout(500);
  await goOnline(phone);
  assert.equal(((await answer).data as { response: string }).response, reply);

  await page.waitForFunction(
    (text) => (document.querySelector('.message.assistant:last-of-type .markdown')?.textContent ?? '').trim() === text && !document.querySelector('.message.streaming'),
    reply,
  );
  assert.ok(reply.startsWith(shownWhileOffline.trim()) && shownWhileOffline.trim() !== reply, 'the drop happened mid-stream');
  const resumed = phone.sent.filter((f) => f.type === 'follow_conversation' && f.conversation_id === conversationId && typeof f.after_seq === 'number');
  assert.equal(resumed.length, 1, 'after the reconnect the page followed again from the last seq it saw');
  const seen = await page.evaluate(() => (window as unknown as { __seen: string[] }).__seen);
  const bad = seen.filter((text) => !reply.startsWith(text));
  assert.deepEqual(bad, [], 'every text the reply showed was a prefix of the reply: no duplicate piece');
  assert.deepEqual(await transcript(page), await storedTranscript(conversationId), 'the transcript is the stored one, each message once');
  assert.deepEqual(phone.errors, []);
  other.close();
  await phone.context.close();
});

test('messages typed offline wait in the outbox, then are sent once each, in order, when the connection returns', async () => {
  const phone = await openPhone();
  const { page } = phone;
  await goOffline(phone);
  const input = page.locator('.composer-input');
  for (const text of ['typed offline one', 'typed offline two']) {
    await input.fill(text);
    await input.press('Enter');
  }
  await page.locator('.message.user.pending').nth(1).waitFor();
  assert.deepEqual(await page.locator('.message.user.pending .pending-note').allInnerTexts(), ['waiting to send', 'waiting to send']);
  const kept = JSON.parse((await machineItem(page, 'remote-assistant.outbox')) ?? '[]') as { text: string; client_message_id: string }[];
  assert.deepEqual(
    kept.map((item) => item.text),
    ['typed offline one', 'typed offline two'],
    'kept in localStorage',
  );

  const mark = fake.requests.length;
  await goOnline(phone);
  await page.waitForFunction(() => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('echo: typed offline two') && !document.querySelector('.message.pending'));
  const asked = fake.requests.slice(mark).map((r) => {
    const messages = (r.body as { messages: { role: string; content: string }[] }).messages;
    return withoutNote(messages)
      .filter((m) => m.role === 'user')
      .at(-1)?.content;
  });
  assert.deepEqual(asked, ['typed offline one', 'typed offline two'], 'the provider saw each message once, in order');
  const chats = phone.sent.filter((f) => f.type === 'chat');
  assert.deepEqual(
    chats.map((f) => f.client_message_id),
    kept.map((item) => item.client_message_id),
    'each sent with its client_message_id',
  );

  const probe = await TestClient.authed(svc.wsUrl, svc.token);
  const rows = ((await probe.request({ type: 'list_conversations' })).data as { conversations: { id: string; title: string }[] }).conversations;
  probe.close();
  const row = rows.find((c) => c.title === 'typed offline one');
  assert.ok(row, 'one conversation for both messages');
  assert.equal(rows.filter((c) => c.title === 'typed offline two').length, 0, "the second went to the first one's conversation");
  // The page draws the streamed reply before the service has stored it: wait for the store.
  await waitFor(async () => (await storedTranscript(row.id)).length === 4, 'both replies stored');
  assert.deepEqual(await storedTranscript(row.id), ['typed offline one', 'echo: typed offline one', 'typed offline two', 'echo: typed offline two']);
  assert.deepEqual(await transcript(page), await storedTranscript(row.id));
  // The second chat's answer (which takes it out of the outbox) may arrive just after its reply is stored.
  await waitFor(async () => (await machineItem(page, 'remote-assistant.outbox')) === '[]', 'the outbox is empty once both chats are answered');
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});

/** Rewrites the `protocol` the page gives in `auth`, so the real service answers as to another build. */
function speakProtocol(version: number) {
  return (page: Page) =>
    page.routeWebSocket(/\/ws$/, (ws) => {
      const server = ws.connectToServer();
      ws.onMessage((message) => {
        const frame = JSON.parse(String(message)) as Record<string, unknown>;
        server.send(JSON.stringify(frame.type === 'auth' ? { ...frame, protocol: version } : frame));
      });
    });
}

test("the auth reply's update is shown: an older page is told to reload, a newer one that the service is older", async () => {
  const current = await openPhone();
  assert.ok(await current.page.locator('.update-banner').isHidden(), 'no banner when both speak the same protocol');
  await current.context.close();

  const older = await openPhone(speakProtocol(1));
  await older.page.locator('.update-banner[data-update="client"]').waitFor();
  assert.match(await older.page.locator('.update-banner').innerText(), /page is older than the service: reload/i);
  assert.ok(await older.page.locator('.update-banner .reload').isVisible());
  await older.context.close();

  const newer = await openPhone(speakProtocol(99));
  await newer.page.locator('.update-banner[data-update="service"]').waitFor();
  assert.match(await newer.page.locator('.update-banner').innerText(), /service is older than this page/i);
  await newer.context.close();
});

test('a turn started elsewhere shows Stop and its queue: a queued message is removed, Stop cancels the turn', async () => {
  const other = await TestClient.authed(svc.wsUrl, svc.token);
  const first = await other.request({ type: 'chat', message: 'a conversation to stop' });
  const conversationId = (first.data as { conversation_id: string }).conversation_id;
  const phone = await openPhone();
  const { page } = phone;
  await openConversation(page, 'a conversation to stop');
  await page.waitForFunction(() => (document.querySelector('.message-list')?.textContent ?? '').includes('echo: a conversation to stop'));
  assert.ok(await page.locator('.composer .stop').isHidden(), 'no Stop while the conversation is idle');

  fake.script({ text: Array.from({ length: 100 }, (_, i) => `slow${i}`).join(' '), chunks: 100, chunkDelayMs: 100 });
  const running = other.request({ type: 'chat', conversation_id: conversationId, message: 'a long turn', stream: true }, 20_000);
  const queued = other.request({ type: 'chat', conversation_id: conversationId, message: 'waiting behind it', client_message_id: 'queued-from-lan' }, 20_000);
  await page.locator('.queue .queued[data-client-message-id="queued-from-lan"]').waitFor();
  assert.match(await page.locator('.queue').innerText(), /waiting behind it/);
  await page.locator('.composer .stop').waitFor({ state: 'visible' });

  await page.locator('.queue .queued[data-client-message-id="queued-from-lan"] .queue-remove').click();
  assert.deepEqual((await queued).data, { response: '', conversation_id: conversationId, cancelled: true }, 'the queued chat is answered removed');
  await page.locator('.queue').waitFor({ state: 'hidden' });

  await page.waitForFunction(() => / slow3\b/.test(document.querySelector('.message.assistant.streaming')?.textContent ?? ''));
  await page.locator('.composer .stop').click();
  const stopped = (await running).data as { cancelled?: boolean };
  assert.equal(stopped.cancelled, true, 'Stop on the page cancelled the turn the LAN client started');
  await page.locator('.composer .stop').waitFor({ state: 'hidden' });
  await page.locator('.message.assistant', { hasText: 'Stopped' }).waitFor();
  assert.ok(!(await storedTranscript(conversationId)).includes('waiting behind it'), 'the removed message was never stored');
  assert.deepEqual(phone.errors, []);
  other.close();
  await phone.context.close();
});

test("a reload before the connection returns keeps a new chat's typed messages on screen, then sends them once", async () => {
  let blocked = true;
  // The service unreachable (the socket refused) while the page itself still loads.
  const phone = await openPhone((page) =>
    page.routeWebSocket(/\/ws$/, (ws) => {
      if (blocked) ws.close({ code: 1011, reason: 'unreachable' });
      else ws.connectToServer();
    }),
  ).catch(() => undefined);
  assert.equal(phone, undefined, 'the page could not connect while blocked');
  const context = browser.contexts().at(-1)!;
  const page = context.pages()[0];
  const input = page.locator('.composer-input');
  await input.fill('typed before a reload');
  await input.press('Enter');
  await page.locator('.message.user.pending').waitFor();
  await page.reload();
  await page.locator('.message.user.pending', { hasText: 'typed before a reload' }).waitFor();
  assert.equal(await page.locator('.message.user').count(), 1);
  blocked = false;
  await page.evaluate(() => window.dispatchEvent(new Event('online')));
  await page.locator('.connection[data-state="open"]').waitFor({ timeout: 20_000 });
  await page.waitForFunction(
    () => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('echo: typed before a reload') && !document.querySelector('.message.pending'),
  );
  assert.deepEqual(await transcript(page), ['typed before a reload', 'echo: typed before a reload']);
  await context.close();
});

test('a message typed while the page\u2019s own turn runs is sent at once: every client sees it queued and may remove it; the rest runs in order', async () => {
  const phone = await openPhone();
  const { page } = phone;
  const observer = await TestClient.authed(svc.wsUrl, svc.token);
  type Row = { queued: { client_message_id: string | null; preview: string }[] };
  const slow = Array.from({ length: 40 }, (_, i) => `piece${i}`).join(' ');
  fake.script({ text: slow, chunks: 40, chunkDelayMs: 100 });
  const input = page.locator('.composer-input');
  await input.fill('first from the phone');
  await input.press('Enter');
  await page.waitForFunction(() => /piece2\b/.test(document.querySelector('.message.assistant.streaming')?.textContent ?? ''));
  for (const text of ['second while it runs', 'third while it runs']) {
    await input.fill(text);
    await input.press('Enter');
  }

  // Both reach the service while the first turn still runs: queued there, so every client sees them.
  const update = await observer.next((f) => f.event === 'conversation.updated' && (f.conversation as Row).queued.length === 2, 10_000);
  const conversationId = update.conversation_id as string;
  const chats = phone.sent.filter((f) => f.type === 'chat');
  assert.deepEqual(
    chats.map((f) => f.message),
    ['first from the phone', 'second while it runs', 'third while it runs'],
  );
  assert.deepEqual(
    (update.conversation as Row).queued.map((q) => q.client_message_id),
    [chats[1].client_message_id, chats[2].client_message_id],
  );
  await page.locator('.queue .queued .queue-remove').nth(1).waitFor();
  assert.ok((await page.locator('.message.assistant.streaming').count()) > 0, 'the first turn is still running');

  const removed = await observer.request({ type: 'remove_queued', conversation_id: conversationId, client_message_id: chats[1].client_message_id });
  assert.deepEqual(removed.data, { removed: true });
  await page.locator('.message.user', { hasText: 'second while it runs' }).waitFor({ state: 'detached' });

  // The reply stored (its chat.message ends the streaming), not only its pieces shown.
  await page.waitForFunction(
    () => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('echo: third while it runs') && !document.querySelector('.message.pending, .message.streaming'),
  );
  const stored = await storedTranscript(conversationId);
  assert.deepEqual(stored, ['first from the phone', slow, 'third while it runs', 'echo: third while it runs'], 'the removed message was never stored; the rest in order');
  assert.deepEqual(await transcript(page), stored);
  // A message leaves the outbox when the service answers its chat, which may come just after the reply's events.
  await waitFor(async () => (await machineItem(page, 'remote-assistant.outbox')) === '[]', 'the outbox empty');
  assert.equal(phone.sent.filter((f) => f.type === 'chat').length, 3, 'each sent once');
  assert.deepEqual(phone.errors, []);
  observer.close();
  await phone.context.close();
});

test('two identical messages in flight from the page are told apart by their client_message_id, not by their text', async () => {
  const phone = await openPhone();
  const { page } = phone;
  const slow = Array.from({ length: 30 }, (_, i) => `slowpart${i}`).join(' ');
  fake.script({ text: slow, chunks: 30, chunkDelayMs: 100 });
  const input = page.locator('.composer-input');
  await input.fill('the same words');
  await input.press('Enter');
  await page.waitForFunction(() => /slowpart2\b/.test(document.querySelector('.message.assistant.streaming')?.textContent ?? ''));
  // While its turn still runs (its chat in flight), the same words start a new chat: two chats of one text in flight.
  await page.locator('.drawer-toggle').click();
  await page.locator('.new-chat').click();
  await input.fill('the same words');
  await input.press('Enter');
  await page.locator('.message.assistant', { hasText: 'echo: the same words' }).waitFor();
  await page.waitForFunction(() => !document.querySelector('.message.pending'));
  const chats = phone.sent.filter((f) => f.type === 'chat' && f.message === 'the same words');
  assert.equal(chats.length, 2, 'both sent');
  assert.notEqual(chats[0].client_message_id, chats[1].client_message_id);
  // The new chat's user message is the bubble typed, marked sent: not drawn a second time beside it.
  assert.deepEqual(await transcript(page), ['the same words', 'echo: the same words']);

  const probe = await TestClient.authed(svc.wsUrl, svc.token);
  type Row = { id: string; title: string; state: string };
  const rows = async () => ((await probe.request({ type: 'list_conversations' })).data as { conversations: Row[] }).conversations.filter((c) => c.title === 'the same words');
  assert.equal((await rows()).length, 2, 'two conversations, one per message');
  // The first turn ends before the next test's provider script.
  await waitFor(async () => (await rows()).every((c) => c.state === 'idle'), 'the first turn ended', 10_000);
  probe.close();
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});

test('after a reload, a queued message is told from an earlier one of the same text by its client_message_id: drawn waiting, then once', async () => {
  const phone = await openPhone();
  const { page } = phone;
  const input = page.locator('.composer-input');
  await input.fill('yes please');
  await input.press('Enter');
  await page.locator('.message.assistant', { hasText: 'echo: yes please' }).waitFor();
  const long = Array.from({ length: 60 }, (_, i) => `longturn${i}`).join(' ');
  fake.script({ text: long, chunks: 60, chunkDelayMs: 100 });
  await input.fill('start a long turn');
  await input.press('Enter');
  await page.waitForFunction(() => /longturn2\b/.test(document.querySelector('.message.assistant.streaming')?.textContent ?? ''));
  // The same words again: sent, and queued by the service behind the long turn (not stored yet).
  await input.fill('yes please');
  await input.press('Enter');
  await page.locator('.queue .queued').waitFor();
  await page.reload();
  // The history (holding the earlier "yes please") is drawn, then the outbox's messages it does not hold.
  await page.locator('.message.user', { hasText: 'start a long turn' }).waitFor();
  assert.equal(await page.locator('.message.user.pending', { hasText: 'yes please' }).count(), 1, 'the queued message is still shown, waiting');

  await page.locator('.message.assistant', { hasText: 'echo: yes please' }).nth(1).waitFor({ timeout: 20_000 });
  await page.waitForFunction(() => !document.querySelector('.message.pending') && !document.querySelector('.message.streaming'));
  const probe = await TestClient.authed(svc.wsUrl, svc.token);
  const rows = ((await probe.request({ type: 'list_conversations' })).data as { conversations: { id: string; title: string; state: string }[] }).conversations;
  probe.close();
  const row = rows.find((c) => c.title === 'yes please');
  assert.ok(row);
  await waitFor(async () => (await storedTranscript(row.id)).length === 6, 'the reply stored');
  assert.deepEqual(await storedTranscript(row.id), ['yes please', 'echo: yes please', 'start a long turn', long, 'yes please', 'echo: yes please']);
  assert.deepEqual(await transcript(page), await storedTranscript(row.id), 'each message once');
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});

test('a chat in flight when the network goes, with the spurious offline / online events phones fire, is run, stored and shown once (review21a)', async () => {
  const phone = await openPhone();
  const { page } = phone;
  const reply = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
  fake.script({ text: reply, chunks: 30, chunkDelayMs: 60 });
  const mark = fake.requests.length;
  const input = page.locator('.composer-input');
  await input.fill('in flight when offline');
  await input.press('Enter');
  await page.waitForFunction(() => / w3\b/.test(document.querySelector('.message.assistant.streaming')?.textContent ?? ''));
  await goOffline(phone);
  await page.evaluate(() => {
    for (let i = 0; i < 3; i += 1) window.dispatchEvent(new Event('offline'));
  });
  await goOnline(phone);
  await page.evaluate(() => {
    for (let i = 0; i < 3; i += 1) window.dispatchEvent(new Event('online'));
    window.dispatchEvent(new Event('offline'));
    window.dispatchEvent(new Event('online'));
  });
  await page.locator('.connection[data-state="open"]').waitFor({ timeout: 20_000 });
  await waitFor(async () => (await machineItem(page, 'remote-assistant.outbox')) === '[]', 'the outbox to be empty once the chat is answered', 20_000);
  const chats = phone.sent.filter((f) => f.type === 'chat');
  assert.equal(new Set(chats.map((f) => f.client_message_id)).size, 1, 'every send of it carried the same client_message_id');
  assert.equal(fake.requests.length - mark, 1, 'the provider was asked once');
  const probe = await TestClient.authed(svc.wsUrl, svc.token);
  const listed = ((await probe.request({ type: 'list_conversations' })).data as { conversations: { id: string; title: string }[] }).conversations;
  probe.close();
  const matching = listed.filter((c) => c.title === 'in flight when offline');
  assert.equal(matching.length, 1, 'one conversation');
  await waitFor(async () => (await storedTranscript(matching[0]!.id)).length === 2, 'the reply to be stored', 20_000);
  assert.deepEqual(await storedTranscript(matching[0]!.id), ['in flight when offline', reply]);
  await page.waitForFunction(() => !document.querySelector('.message.pending') && !document.querySelector('.message.streaming'));
  assert.deepEqual(await transcript(page), ['in flight when offline', reply], 'shown once');
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});
