// retry_turn (docs/protocol.md, "Retrying a turn"): a failed or cancelled turn's user message is
// answered again, in place: the model reads the message once, nothing new is stored before the reply,
// the history holds the message once and its reply after it. Refused clearly (unknown ids, not the last
// message, already answered, a turn running, wrong types); a resend under the same client_retry_id gets
// the first one's result, never a second run. Real sockets and the fake provider, which records every request.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { hashPassword } from '../../src/transport/auth/passwords';
import { sessionClient } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import type { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
const PASSWORD = 'correct horse battery staple';
let ada: TestClient | undefined;

const svc = useService({
  config: async () => ({ model: 'fake-model', users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }] }),
  afterStart: async (started) => {
    ada = await sessionClient(started, 'ada', PASSWORD);
  },
});
after(() => ada?.close());

const completions = () => svc.fake.requests.filter((r) => r.path.startsWith('/v1/chat/completions'));
/** How many of a request's user messages hold `text`. */
const timesAsked = (body: unknown, text: string) =>
  ((body as { messages: { role: string; content: unknown }[] }).messages ?? []).filter((m) => m.role === 'user' && JSON.stringify(m.content).includes(text)).length;

async function ok(client: TestClient, frame: Frame): Promise<Frame> {
  const reply = await client.request(frame);
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return reply.data as Frame;
}

async function refused(client: TestClient, frame: Frame, code: string, words: RegExp): Promise<void> {
  const reply = await client.request(frame);
  assert.equal(reply.status, 'error', JSON.stringify(reply));
  assert.equal(reply.code, code, JSON.stringify(reply));
  assert.match(String(reply.error), words);
}

/** A conversation whose last message failed (the provider refused the key): its id and the message's. */
async function failedTurn(client: TestClient, text: string, conversationId?: string): Promise<{ conversationId: string; messageId: string }> {
  svc.fake.script({ status: 401 });
  const reply = await client.request({ type: 'chat', message: text, ...(conversationId ? { conversation_id: conversationId } : {}) });
  assert.equal(reply.status, 'error');
  const id = conversationId ?? String((await client.next((f) => f.event === 'turn.ended' && f.outcome === 'failed')).conversation_id);
  const messages = (await ok(client, { type: 'get_messages', conversation_id: id })).messages as { id: string; role: string; content: string }[];
  const last = messages.at(-1)!;
  assert.equal(last.content, text);
  return { conversationId: id, messageId: last.id };
}

test('a failed turn retried: the model reads the message once, the history holds it once and its reply after it', async () => {
  const owner = await svc.client();
  const watcher = await svc.client();
  const { conversationId, messageId } = await failedTurn(owner, 'Summarise the release notes');
  await ok(watcher, { type: 'follow_conversation', conversation_id: conversationId });
  const before = completions().length;
  svc.fake.script({ text: 'Here is the summary.', chunks: 2 });
  const answer = await ok(owner, { type: 'retry_turn', id: 'retry-1', conversation_id: conversationId, message_id: messageId, stream: true });
  assert.deepEqual(answer, { response: 'Here is the summary.', conversation_id: conversationId });

  const asked = completions().slice(before);
  assert.equal(asked.length, 1, 'one request to the model');
  assert.equal(timesAsked(asked[0].body, 'Summarise the release notes'), 1, 'the model reads the message once');
  const messages = (await ok(owner, { type: 'get_messages', conversation_id: conversationId })).messages as { id: string; role: string; content: string }[];
  assert.deepEqual(
    messages.map((m) => [m.role, m.content]),
    [
      ['user', 'Summarise the release notes'],
      ['assistant', 'Here is the summary.'],
    ],
  );
  assert.equal(messages[0].id, messageId, 'the same message, not a copy');

  // The sender hears its turn as a follower (its request id on its copies), the other follower too; no user message again.
  const delta = await owner.next((f) => f.event === 'chat.delta' && f.conversation_id === conversationId);
  assert.equal(delta.id, 'retry-1');
  const reply = await watcher.next((f) => f.event === 'chat.message' && f.conversation_id === conversationId);
  assert.equal((reply.message as { role: string; content: string }).content, 'Here is the summary.');
  const ended = await watcher.next((f) => f.event === 'turn.ended' && f.conversation_id === conversationId && f.outcome === 'answered');
  assert.equal(ended.message_id, messageId, 'turn.ended names the message the turn answered');
  owner.close();
  watcher.close();
});

test('a retry that fails again is announced failed for the same message, and may be retried again', async () => {
  const owner = await svc.client();
  const { conversationId, messageId } = await failedTurn(owner, 'Fails twice');
  svc.fake.script({ status: 401 });
  const again = await owner.request({ type: 'retry_turn', conversation_id: conversationId, message_id: messageId });
  assert.equal(again.status, 'error');
  assert.equal(again.code, 'server_error');
  const ended = await owner.next((f) => f.event === 'turn.ended' && f.conversation_id === conversationId);
  assert.equal(ended.outcome, 'failed');
  assert.equal(ended.message_id, messageId);
  assert.equal(ended.reason, 'auth');
  svc.fake.script({ text: 'Third time.' });
  assert.equal((await ok(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: messageId })).response, 'Third time.');
  owner.close();
});

test('a cancelled turn may be retried; a tool round of the failed try stays, the message is read once', async () => {
  const owner = await svc.client();
  svc.fake.script({ text: 'a b c d e f g h i j', chunks: 10, chunkDelayMs: 200 });
  owner.send({ type: 'chat', id: 'long', message: 'Count slowly', stream: true });
  const delta = await owner.next((f) => f.event === 'chat.delta' && f.id === 'long');
  const conversationId = String(delta.conversation_id);
  owner.send({ type: 'cancel', id: 'long' });
  await owner.next((f) => f.event === 'turn.ended' && f.conversation_id === conversationId && f.outcome === 'cancelled');
  await owner.next((f) => f.id === 'long' && 'status' in f);
  const [message] = (await ok(owner, { type: 'get_messages', conversation_id: conversationId })).messages as { id: string }[];
  const before = completions().length;
  svc.fake.script({ text: 'Counted.' });
  assert.equal((await ok(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: message.id })).response, 'Counted.');
  assert.equal(timesAsked(completions()[before].body, 'Count slowly'), 1);
  owner.close();
});

test('refused clearly: unknown ids, not a user message, already answered, not the last message, a turn running, wrong types', async () => {
  const owner = await svc.client();
  const { conversationId, messageId } = await failedTurn(owner, 'First, failed');
  const other = await failedTurn(owner, 'Another conversation');
  const before = completions().length;
  await refused(owner, { type: 'retry_turn', conversation_id: 'no-such-conversation', message_id: messageId }, 'not_found', /conversation no-such-conversation not found/);
  await refused(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: 'no-such-message' }, 'not_found', /message no-such-message not found/);
  await refused(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: other.messageId }, 'not_found', /not found in conversation/);
  await refused(owner, { type: 'retry_turn', conversation_id: conversationId }, 'invalid_request', /message_id/);
  await refused(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: 7 }, 'invalid_request', /message_id must be a string/);
  await refused(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: messageId, client_retry_id: '' }, 'invalid_request', /client_retry_id must not be empty/);
  await refused(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: messageId, stream: 'yes' }, 'invalid_request', /stream/);
  assert.equal(completions().length, before, 'nothing refused reached the model');

  // A later message answered: the failed one is no longer the last; the answered one cannot be asked again.
  svc.fake.script({ text: 'Answered.' });
  await ok(owner, { type: 'chat', conversation_id: conversationId, message: 'Second, answered' });
  const messages = (await ok(owner, { type: 'get_messages', conversation_id: conversationId })).messages as { id: string; role: string }[];
  const [, second, reply] = messages;
  await refused(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: messageId }, 'conflict', /not the conversation's last message/);
  await refused(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: second.id }, 'conflict', /already answered/);
  await refused(owner, { type: 'retry_turn', conversation_id: conversationId, message_id: reply.id }, 'invalid_request', /not a user message/);

  // A turn running in the conversation (a first retry): a second is refused, the first answers.
  svc.fake.script({ text: 'slow answer here', chunks: 4, chunkDelayMs: 150 });
  owner.send({ type: 'retry_turn', id: 'first', conversation_id: other.conversationId, message_id: other.messageId, stream: true });
  await owner.next((f) => f.event === 'chat.delta' && f.id === 'first');
  await refused(owner, { type: 'retry_turn', conversation_id: other.conversationId, message_id: other.messageId }, 'conflict', /a turn runs in this conversation/);
  const first = await owner.next((f) => f.id === 'first' && 'status' in f);
  assert.equal((first.data as Frame).response, 'slow answer here');
  const stored = (await ok(owner, { type: 'get_messages', conversation_id: other.conversationId })).messages as { role: string }[];
  assert.deepEqual(
    stored.map((m) => m.role),
    ['user', 'assistant'],
  );
  owner.close();
});

test('a resend under the same client_retry_id gets the first result, running or answered, on another socket too: the model is asked once', async () => {
  const owner = await svc.client();
  const second = await svc.client();
  const { conversationId, messageId } = await failedTurn(owner, 'Resend me');
  const before = completions().length;
  svc.fake.script({ text: 'Only once.', chunks: 3, chunkDelayMs: 150 });
  const retry = { type: 'retry_turn', conversation_id: conversationId, message_id: messageId, client_retry_id: 'tap-1', stream: true };
  owner.send({ ...retry, id: 'a' });
  await owner.next((f) => f.event === 'chat.delta' && f.id === 'a');
  // The connection "dropped": the same retry again from another socket while it runs, then after it.
  const whileRunning = await ok(second, retry);
  assert.equal(whileRunning.response, 'Only once.');
  assert.equal((await ok(owner, retry)).response, 'Only once.');
  assert.equal(completions().length, before + 1, 'the model was asked once');
  // The same id for another message: refused; a new id once answered: already answered.
  const other = await failedTurn(owner, 'Another failed');
  await refused(owner, { ...retry, conversation_id: other.conversationId, message_id: other.messageId }, 'invalid_request', /client_retry_id was already used/);
  await refused(owner, { ...retry, client_retry_id: 'tap-2' }, 'conflict', /already answered/);
  // Another person's id is their own: ada's resend under 'tap-1' is a retry of her own (refused: answered).
  await refused(ada!, retry, 'conflict', /already answered/);
  owner.close();
  second.close();
});

test('a retry resent after its conversation was deleted is not_found, as after a restart: the deleted reply is never given again', async () => {
  const owner = await svc.client();
  const { conversationId, messageId } = await failedTurn(owner, 'Retried, then deleted');
  svc.fake.script({ text: 'A reply then deleted.' });
  const retry = { type: 'retry_turn', conversation_id: conversationId, message_id: messageId, client_retry_id: 'tap-deleted' };
  assert.equal((await ok(owner, retry)).response, 'A reply then deleted.');
  await ok(owner, { type: 'delete_conversation', conversation_id: conversationId });
  const before = completions().length;
  await refused(owner, retry, 'not_found', /deleted/);
  assert.equal(completions().length, before, 'nothing ran');
  owner.close();
});

test('a resend of a retry refused before it ran asks again (not remembered)', async () => {
  const owner = await svc.client();
  const { conversationId, messageId } = await failedTurn(owner, 'Busy then free');
  svc.fake.script({ text: 'slow', chunks: 3, chunkDelayMs: 150 });
  owner.send({ type: 'retry_turn', id: 'busy', conversation_id: conversationId, message_id: messageId, stream: true });
  await owner.next((f) => f.event === 'chat.delta' && f.id === 'busy');
  const retry = { type: 'retry_turn', conversation_id: conversationId, message_id: messageId, client_retry_id: 'tap-busy' };
  await refused(owner, retry, 'conflict', /a turn runs/);
  await owner.next((f) => f.id === 'busy' && 'status' in f);
  // Answered meanwhile by the first: the resend is checked again, not given the old refusal.
  await refused(owner, retry, 'conflict', /already answered/);
  owner.close();
});

test("a password user may retry a failed turn in the owner's conversation, as it may chat there", async () => {
  const owner = await svc.client();
  const { conversationId, messageId } = await failedTurn(owner, "The owner's message");
  svc.fake.script({ text: 'Answered for ada.' });
  assert.equal((await ok(ada!, { type: 'retry_turn', conversation_id: conversationId, message_id: messageId })).response, 'Answered for ada.');
  owner.close();
});

test('a client following afresh while a retry runs is sent the retried turn so far, as for a chat', async () => {
  const owner = await svc.client();
  const late = await svc.client();
  const { conversationId, messageId } = await failedTurn(owner, 'Follow me late');
  svc.fake.script({ text: 'one two three four', chunks: 4, chunkDelayMs: 150 });
  owner.send({ type: 'retry_turn', id: 'r', conversation_id: conversationId, message_id: messageId, stream: true });
  const own = await owner.next((f) => f.event === 'chat.delta' && f.id === 'r');
  await ok(late, { type: 'follow_conversation', conversation_id: conversationId });
  const first = await late.next((f) => f.event === 'chat.delta' && f.conversation_id === conversationId);
  assert.equal(first.seq, own.seq, "the turn's first piece, replayed");
  await owner.next((f) => f.id === 'r' && 'status' in f);
  owner.close();
  late.close();
});

test('review24e: a turn.retrying replayed to a client that follows afresh says what remains of the wait, not its whole length', async () => {
  const owner = await svc.client();
  const late = await svc.client();
  svc.fake.script({ status: 429, retryAfter: 2 }, { text: 'After the wait.' });
  owner.send({ type: 'chat', id: 'limited', message: 'Rate limited, then answered' });
  const first = await owner.next((f) => f.event === 'turn.retrying' && f.id === 'limited');
  const conversationId = String(first.conversation_id);
  assert.equal(first.retry_in_ms, 2000);
  const waited = 600;
  await new Promise((resolve) => setTimeout(resolve, waited));
  await ok(late, { type: 'follow_conversation', conversation_id: conversationId });
  const replayed = await late.next((f) => f.event === 'turn.retrying' && f.conversation_id === conversationId);
  assert.equal(replayed.seq, first.seq, 'the same event');
  // The service's clock moved on at least as far as ours between its sending and the replay.
  assert.ok(Number(replayed.retry_in_ms) <= 2000 - waited + 1, `replayed with ${replayed.retry_in_ms} ms`);
  assert.ok(Number(replayed.retry_in_ms) >= 0);
  await owner.next((f) => f.id === 'limited' && 'status' in f);
  owner.close();
  late.close();
});
