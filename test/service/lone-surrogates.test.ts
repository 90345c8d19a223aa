// A message whose text carries a lone UTF-16 surrogate (JSON "\ud800" over the socket, or in a model's
// answer) is shown the same before and after a restart: the store makes text well-formed where it enters
// (a lone surrogate becomes U+FFFD, String.prototype.toWellFormed), so the live answer, the events sent,
// what the model is sent, get_messages, search, export and the conversation's title and preview all agree
// with what history.db and sql.js (UTF-8 bindings, which cannot hold a lone surrogate) give back after a
// stop and start, and after kill -9 and the journal's replay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serve } from '../helpers/cli';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, startService, TEST_TOKEN, writeConfig } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { startWebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 120_000 };

/** A lone high and a lone low surrogate, and a whole pair (an emoji) that must stay as it is. */
const USER = 'alpha \ud800 beta \udc00 gamma \ud83d\ude00 zebraword';
const REPLY = 'reply \udfff delta \ud83d\ude00 zebraword';

/** A context chip's text: kept in the message's `data`, JSON, which escapes a lone surrogate: read back as given. */
const CHIP = { kind: 'selection', path: 'src/a.ts', range: { start_line: 1, end_line: 1 }, text: 'chip \udbff text' };

type Frame = Record<string, unknown>;
type Message = { role: string; content: string; context?: unknown };

interface Seen {
  messages: Message[];
  search: unknown[];
  exported: unknown[];
  row: { title: string; last_message: string | null };
}

/** What a client reads of the conversation: its messages, a search, a JSON export, its listed row. */
async function readBack(client: TestClient, id: string): Promise<Seen> {
  const got = await client.request({ type: 'get_messages', conversation_id: id, include_tools: true });
  assert.equal(got.status, 'ok', JSON.stringify(got));
  const messages = (got.data as { messages: Message[] }).messages;
  const found = await client.request({ type: 'search_messages', query: 'zebraword' });
  assert.equal(found.status, 'ok', JSON.stringify(found));
  const search = (found.data as { hits: { conversation_id: string }[] }).hits.filter((h) => h.conversation_id === id);
  const exported = await client.request({ type: 'export_conversation', conversation_id: id, format: 'json' });
  assert.equal(exported.status, 'ok', JSON.stringify(exported).slice(0, 300));
  const piece = exported.data as { text: string; next_offset: number | null };
  assert.equal(piece.next_offset, null, 'one piece');
  const listed = await client.request({ type: 'list_conversations' });
  const row = (listed.data as { conversations: (Seen['row'] & { id: string })[] }).conversations.find((c) => c.id === id)!;
  return { messages, search, exported: (JSON.parse(piece.text) as { messages: unknown[] }).messages, row: { title: row.title, last_message: row.last_message } };
}

/** Every string in a value is well-formed UTF-16. */
function assertWellFormed(value: unknown, where: string): void {
  const text = JSON.stringify(value);
  assert.ok(!/\\ud[89a-f][0-9a-f]{2}/i.test(text), `${where} holds a lone surrogate: ${text.slice(0, 400)}`);
}

/** A chat with the lone surrogates; the live answer, the chat.message events and what is read at once. */
async function chatLive(client: TestClient, fake: FakeOpenAI): Promise<{ id: string; live: Seen; answered: unknown }> {
  fake.script({ text: REPLY });
  const answer = await client.request({ ...CHAT });
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  const { conversation_id: id, response } = answer.data as { conversation_id: string; response: string };
  const events = client.frames.filter((f: Frame) => f.event === 'chat.message' && f.conversation_id === id).map((f: Frame) => f.message as Message);
  const live = await readBack(client, id);
  const contents = live.messages.map((m) => m.content);
  assert.deepEqual(contents, [USER.toWellFormed(), REPLY.toWellFormed()], 'stored well-formed, the whole pair kept');
  assert.equal(response, REPLY.toWellFormed(), 'the live answer is what is stored');
  assert.deepEqual(
    events.map((m) => m.content),
    contents,
    'the events sent are what is stored',
  );
  // What the model was sent: the user message as stored.
  const request = fake.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] };
  const sent = request.messages.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content));
  assert.ok(
    sent.some((s) => s.includes(JSON.stringify(USER.toWellFormed()).slice(1, -1))),
    `the model was sent the stored text: ${sent.join(' | ').slice(0, 400)}`,
  );
  // Title and preview as the body: one U+FFFD a lone surrogate (sql.js's binding made three of it).
  assert.ok(live.row.title.startsWith('alpha \ufffd beta \ufffd gamma'), live.row.title);
  assert.equal(live.row.last_message, REPLY.toWellFormed());
  assert.deepEqual(live.messages[0].context, [CHIP], "the chip's text as given (its data is JSON)");
  assertWellFormed([contents, live.search, live.row], 'a read');
  assertWellFormed(
    events.map((m) => m.content),
    'an event',
  );
  // Resent as typed (its lone surrogates too): answered from the store, not refused as a different message.
  assert.deepEqual((await client.request({ ...CHAT })).data, answer.data, 'a resend live');
  return { id, live, answered: answer.data };
}

/** The chat, with a client_message_id so that a resend (after a restart too) is answered from the store. */
const CHAT = { type: 'chat', message: USER, context: [CHIP], client_message_id: 'lone-1' };

/** After a restart: what was shown live, and a resend of the chat answered as the first time. */
async function assertAsLive(client: TestClient, id: string, live: Seen, answered: unknown, when: string): Promise<void> {
  assert.deepEqual(await readBack(client, id), live, `${when}: what was shown live`);
  const resent = await client.request({ ...CHAT });
  assert.deepEqual(resent.data, answered, `${when}: a resend ${JSON.stringify(resent).slice(0, 300)}`);
}

test('a lone surrogate in a chat and in its answer: live, and after a stop and start, everything reads the same, well-formed', LIMIT, async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const { dir, cleanup } = await tempDir('lone-surrogates-');
  t.after(cleanup);
  const config = { provider: 'openai', model: 'fake-model', base_url: fake.url };
  let running = await startService(config, { dataDir: dir });
  t.after(() => running.stop());
  let client = await TestClient.authed(running.wsUrl, running.token);
  const { id, live, answered } = await chatLive(client, fake);
  client.close();
  await running.stop();

  running = await startService(config, { dataDir: dir, keepConfig: true });
  client = await TestClient.authed(running.wsUrl, running.token);
  t.after(() => client.close());
  await assertAsLive(client, id, live, answered, 'after the restart');
});

test('a lone surrogate after kill -9: the journal replayed reads as live (real CLI)', LIMIT, async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const { dir, cleanup } = await tempDir('lone-surrogates-kill-');
  t.after(cleanup);
  await writeConfig(dir, { provider: 'openai', model: 'fake-model', base_url: fake.url });
  let proc = await serve(dir);
  t.after(async () => {
    proc.child.kill('SIGTERM');
    await proc.exited;
  });
  let client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
  const { id, live, answered } = await chatLive(client, fake);
  client.close();
  proc.child.kill('SIGKILL');
  await proc.exited;

  proc = await serve(dir);
  client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
  t.after(() => client.close());
  await assertAsLive(client, id, live, answered, 'after kill -9');
});

test('a webhook message and its reply with lone surrogates: the delivery, the stored messages and the title agree, before and after a restart', LIMIT, async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const receiver = await startWebhookReceiver();
  t.after(() => receiver.close());
  const { dir, cleanup } = await tempDir('lone-surrogates-hook-');
  t.after(cleanup);
  const config = { provider: 'openai', model: 'fake-model', base_url: fake.url, channels: { webhook: { accounts: { open: { incoming_path: '/in', outgoing_url: receiver.url('/out') } } } } };
  const options = { webhook: { retryBaseMs: 50, retryMaxMs: 500, timeoutMs: 1_000 } };
  let running = await startService(config, { dataDir: dir, ...options });
  t.after(() => running.stop());
  fake.script({ text: REPLY });
  const posted = await postJson(`${running.httpUrl}/in`, { message: USER });
  assert.equal(posted.status, 202, posted.text);
  const { conversation_id: id } = posted.body!.data as { conversation_id: string };
  await receiver.waitFor((r) => r.requests.some((c) => c.body?.conversation_id === id), 'the delivery');
  const delivery = receiver.requests.find((c) => c.body?.conversation_id === id)!;
  assert.equal(delivery.body?.message, REPLY.toWellFormed(), 'the delivery carries the stored reply');
  let client = await TestClient.authed(running.wsUrl, running.token);
  const live = await readBack(client, id);
  assert.deepEqual(
    live.messages.map((m) => m.content),
    [USER.toWellFormed(), REPLY.toWellFormed()],
  );
  assertWellFormed([live.row, live.search], 'a read');
  assert.ok(live.row.title.startsWith('alpha \ufffd beta \ufffd gamma'), live.row.title);
  client.close();
  await running.stop();

  running = await startService(config, { dataDir: dir, keepConfig: true, ...options });
  client = await TestClient.authed(running.wsUrl, running.token);
  t.after(() => client.close());
  assert.deepEqual(await readBack(client, id), live, 'after the restart: what was shown live');
});

type Row = { id: string; queued?: { client_message_id: string | null; preview: string }[] };

test('a chat queued behind a running turn is listed with its preview as stored; a client_message_id with a lone surrogate is refused', LIMIT, async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const { dir, cleanup } = await tempDir('lone-surrogates-queue-');
  t.after(cleanup);
  const running = await startService({ provider: 'openai', model: 'fake-model', base_url: fake.url }, { dataDir: dir });
  t.after(() => running.stop());
  const client = await TestClient.authed(running.wsUrl, running.token);
  t.after(() => client.close());
  fake.script({ text: 'started' });
  const started = await client.request({ type: 'chat', message: 'start' });
  const id = (started.data as { conversation_id: string }).conversation_id;

  // A key a resend is looked up by (sql.js, and history.db once cold: UTF-8 both) is refused, not changed.
  const asked = fake.requests.length;
  const refused = await client.request({ type: 'chat', message: 'keyed', conversation_id: id, client_message_id: 'key-\ud800' });
  assert.equal(refused.code, 'invalid_request', JSON.stringify(refused));
  assert.match(String(refused.error), /client_message_id .*lone UTF-16 surrogate/);
  assert.equal((await client.request({ type: 'remove_queued', conversation_id: id, client_message_id: 'key-\udc00' })).code, 'invalid_request');
  assert.equal(fake.requests.length, asked, 'nothing ran');

  // A turn that runs until cancelled, the chat with lone surrogates queued behind it.
  fake.script({ hang: true }, { text: REPLY });
  const first = client.request({ type: 'chat', message: 'long one', conversation_id: id });
  await fake.waitFor((requests) => requests.length === asked + 1);
  const queued = client.request({ type: 'chat', message: USER, conversation_id: id, client_message_id: 'queued-1' });
  const update = await client.next((f) => f.event === 'conversation.updated' && ((f.conversation as Row).queued?.length ?? 0) > 0);
  const expected = [{ client_message_id: 'queued-1', preview: USER.toWellFormed() }];
  assert.deepEqual((update.conversation as Row).queued, expected, 'the event: the preview as the stored message will read');
  const listed = await client.request({ type: 'list_conversations' });
  assert.deepEqual((listed.data as { conversations: Row[] }).conversations.find((c) => c.id === id)!.queued, expected, 'the listing');

  assert.equal((await client.request({ type: 'cancel', conversation_id: id })).status, 'ok');
  assert.equal((await first).status, 'ok');
  const answered = await queued;
  assert.equal(answered.status, 'ok', JSON.stringify(answered));
  const got = await client.request({ type: 'get_messages', conversation_id: id });
  const stored = (got.data as { messages: Message[] }).messages.filter((m) => m.role === 'user').at(-1)!;
  assert.equal(stored.content, expected[0].preview, 'the stored message reads as its preview did');
});
