// The chats waiting in line are bounded per person (s36, bound36; docs/design.md "The messages waiting in line
// are bounded"). A chat sent while its conversation's turn runs waits in memory (its text, its context, its
// pending command) until its turn: before, nothing bounded how many, so one client could queue thousands of
// 1 MiB chats behind one long turn (a permission prompt left for half an hour) and grow the service's memory
// without limit. Now a person's waiting chats, all conversations together, are at most
// MAX_QUEUED_MESSAGES_PER_PERSON and MAX_QUEUED_CHARS_PER_PERSON characters: beyond, the chat is refused
// `rate_limited` (nothing stored, no file held) and may be sent again once one has started or been removed.
// Real sockets, a real data directory, the fake provider holding the first turn open.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { MAX_ATTACHMENTS_PER_MESSAGE, MAX_QUEUED_CHARS_PER_PERSON, MAX_QUEUED_MESSAGES_PER_PERSON, MAX_UNSENT_ATTACHMENTS } from '../../src/protocol';
import { uploadAttachment } from '../helpers/attachments';
import { passwordUsers, sessionClient } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import type { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
const PASSWORD = 'correct horse battery';
const svc = useService({ workspace: true, config: async () => ({ model: 'fake-model', users: await passwordUsers(PASSWORD, 'ada', 'bob') }) });

/** A conversation whose next turn the fake holds open until `open()`: what is sent meanwhile waits in line. */
async function heldConversation(client: TestClient, tag: string) {
  svc.fake.script({ text: 'Made.' });
  const made = await client.request({ type: 'chat', message: `a conversation ${tag}` });
  assert.equal(made.status, 'ok', JSON.stringify(made));
  const conversationId = (made.data as { conversation_id: string }).conversation_id;
  let open = (): void => undefined;
  const held = new Promise((resolve) => (open = () => resolve(undefined)));
  svc.fake.script({ text: 'a long answer in two chunks', chunks: 2, holdAfterChunks: { chunks: 1, until: held } });
  const running = client.request({ type: 'chat', conversation_id: conversationId, message: `a long turn ${tag}`, stream: true }, 30_000);
  await until(client, conversationId, (row) => row.state !== 'idle');
  return { conversationId, open, running };
}

interface Row {
  state: string;
  queued: { client_message_id: string | null }[];
}

/** The conversation's row as listed. */
async function rowOf(client: TestClient, conversationId: string): Promise<Row | undefined> {
  const listed = (await client.request({ type: 'list_conversations' })).data as { conversations: (Row & { id: string })[] };
  return listed.conversations.find((c) => c.id === conversationId);
}

/** Waits (bounded: 200 reads) until the conversation's row satisfies `ok`. */
async function until(client: TestClient, conversationId: string, ok: (row: Row) => boolean): Promise<Row> {
  for (let tries = 0; tries < 200; tries++) {
    const row = await rowOf(client, conversationId);
    if (row && ok(row)) return row;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`the row of ${conversationId} never got there: ${JSON.stringify(await rowOf(client, conversationId))}`);
}

/**
 * The answers of chats sent beyond the bound, or a failure as soon as the conversation lists them all waiting
 * (what main did: every chat accepted, held in memory).
 */
async function refusedOrAllWaiting(client: TestClient, conversationId: string, answers: Promise<Frame>[], waitingIfAccepted: number, held: string): Promise<Frame[]> {
  const accepted = until(client, conversationId, (row) => row.queued.length >= waitingIfAccepted).then(() => 'accepted' as const);
  const outcome = await Promise.race([Promise.all(answers), accepted]);
  if (outcome === 'accepted') assert.fail(`all accepted: ${waitingIfAccepted} chats wait in line, ${held} held in memory`);
  return outcome;
}

async function uploaded(client: TestClient, name: string): Promise<string> {
  const done = await uploadAttachment((frame) => client.request(frame), Buffer.from(`${name}\n`), name, 'text/plain');
  assert.equal(done.status, 'ok', JSON.stringify(done));
  return (done.data as { attachment_id: string }).attachment_id;
}

test('one person queues chats behind a long turn: beyond the bound they are refused rate_limited, the waiting ones keep their order, resends and removals work as before, a refused chat holds no file', async () => {
  const owner = await svc.client();
  const script = await svc.client();
  const { conversationId, open, running } = await heldConversation(owner, 'count');
  // A script with the token queues chats of 64 KiB each, many more than the bound.
  const text = (i: number) => `chat ${i} ${'x'.repeat(64 * 1024)}`;
  const chat = (i: number, extra: Frame = {}) => script.request({ type: 'chat', conversation_id: conversationId, message: text(i), client_message_id: `count-${i}`, ...extra }, 30_000);
  const waiting: Promise<Frame>[] = [];
  for (let i = 0; i < MAX_QUEUED_MESSAGES_PER_PERSON; i++) waiting.push(chat(i));
  await until(owner, conversationId, (row) => row.queued.length === MAX_QUEUED_MESSAGES_PER_PERSON);
  const beyond = 4;
  const extra = Array.from({ length: beyond }, (_, i) => chat(MAX_QUEUED_MESSAGES_PER_PERSON + i));
  const total = MAX_QUEUED_MESSAGES_PER_PERSON + beyond;
  const refused = await refusedOrAllWaiting(owner, conversationId, extra, total, `${total * text(0).length} characters`);
  for (const answer of refused) {
    assert.equal(answer.code, 'rate_limited', JSON.stringify(answer).slice(0, 300));
    assert.match(String(answer.error), new RegExp(`${MAX_QUEUED_MESSAGES_PER_PERSON} of your messages are already waiting .*remove one`));
  }
  const row = await rowOf(owner, conversationId);
  const inOrder = Array.from({ length: MAX_QUEUED_MESSAGES_PER_PERSON }, (_, i) => `count-${i}`);
  assert.deepEqual(
    row?.queued.map((q) => q.client_message_id),
    inOrder,
    'the waiting ones, in the order sent',
  );

  // A resend of a waiting chat (same client_message_id) is not a new one: it waits for the same answer.
  const resent = chat(0);
  // A refused chat holds none of its files: two chats naming the whole bound of unsent uploads, refused, then
  // one more upload (were their holds left, it would be refused: "… wait in queued messages …").
  const files: string[] = [];
  for (let i = 0; i < MAX_UNSENT_ATTACHMENTS; i++) files.push(await uploaded(owner, `bound36-${i}.txt`));
  for (const part of [0, 1]) {
    const answer = await owner.request({
      type: 'chat',
      conversation_id: conversationId,
      message: `files ${part}`,
      attachments: files.slice(part * MAX_ATTACHMENTS_PER_MESSAGE, (part + 1) * MAX_ATTACHMENTS_PER_MESSAGE),
      client_message_id: `files-${part}`,
    });
    assert.equal(answer.code, 'rate_limited', 'the owner is one person on every socket: the same bound');
  }
  await uploaded(owner, 'bound36-after.txt');

  // One taken out of the line: a refused chat sent again (same id) now waits, last.
  const removed = await owner.request({ type: 'remove_queued', conversation_id: conversationId, client_message_id: 'count-5' });
  assert.deepEqual(removed.data, { removed: true });
  const again = chat(MAX_QUEUED_MESSAGES_PER_PERSON);
  const after = await until(owner, conversationId, (r) => r.queued.at(-1)?.client_message_id === `count-${MAX_QUEUED_MESSAGES_PER_PERSON}`);
  assert.equal(after.queued.length, MAX_QUEUED_MESSAGES_PER_PERSON);
  assert.equal((await chat(MAX_QUEUED_MESSAGES_PER_PERSON + 1)).code, 'rate_limited', 'full again');

  // All but the first two taken out (the rest would only run fake turns); the turn ends, they run in order.
  for (const id of after.queued.slice(2).map((q) => q.client_message_id!)) {
    assert.deepEqual((await owner.request({ type: 'remove_queued', conversation_id: conversationId, client_message_id: id })).data, { removed: true });
  }
  open();
  assert.equal((await running).status, 'ok');
  for (const answer of await Promise.all(waiting.slice(0, 2))) {
    assert.equal(answer.status, 'ok', JSON.stringify(answer).slice(0, 300));
    assert.equal((answer.data as { cancelled?: boolean }).cancelled, undefined, 'answered, in turn');
  }
  assert.ok(isDeepStrictEqual((await resent).data, (await waiting[0]).data), 'the resend got the original answer');
  for (const answer of [...(await Promise.all(waiting.slice(2))), await again]) {
    assert.equal((answer.data as { cancelled?: boolean }).cancelled, true, JSON.stringify(answer).slice(0, 300));
  }
  script.close();
});

test("the bound is each person's, across conversations: characters waiting are bounded too, and another person is not held back", async () => {
  const owner = await svc.client();
  const ada = await sessionClient(svc, 'ada', PASSWORD);
  const bob = await sessionClient(svc, 'bob', PASSWORD);
  const a = await heldConversation(owner, 'chars a');
  const b = await heldConversation(owner, 'chars b');
  // Each near the largest a frame carries: as many as fit in the bound, across both conversations.
  const big = 900_000;
  const fit = Math.floor(MAX_QUEUED_CHARS_PER_PERSON / big);
  const send = (client: TestClient, conversationId: string, id: string) =>
    client.request({ type: 'chat', conversation_id: conversationId, message: `${id} ${'y'.repeat(big - id.length - 1)}`, client_message_id: id }, 30_000);
  const waiting: Promise<Frame>[] = [];
  for (let i = 0; i < fit; i++) {
    const where = i % 2 === 0 ? a : b;
    waiting.push(send(ada, where.conversationId, `ada-${i}`));
    await until(owner, where.conversationId, (row) => row.queued.some((q) => q.client_message_id === `ada-${i}`));
  }
  const refused = await refusedOrAllWaiting(owner, b.conversationId, [send(ada, b.conversationId, 'ada-over')], Math.ceil((fit + 1) / 2), `${(fit + 1) * big} characters`);
  assert.equal(refused[0].code, 'rate_limited', JSON.stringify(refused[0]).slice(0, 300));
  assert.match(String(refused[0].error), /already hold \d+ characters.*remove one/);
  // Bob is another person: his chat waits in the same conversation.
  const bobs = send(bob, b.conversationId, 'bob-0');
  await until(owner, b.conversationId, (row) => row.queued.some((q) => q.client_message_id === 'bob-0'));

  // Deleting the conversations ends every turn and every waiting chat (nothing left counted: ada may queue again).
  for (const c of [a, b]) assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: c.conversationId })).status, 'ok');
  await Promise.all([a.running, b.running, bobs, ...waiting]);
  a.open();
  b.open();
  const c = await heldConversation(owner, 'chars c');
  const later: Promise<Frame>[] = [];
  for (let i = 0; i < fit; i++) later.push(send(ada, c.conversationId, `ada-later-${i}`));
  await until(owner, c.conversationId, (row) => row.queued.length === fit);
  assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: c.conversationId })).status, 'ok');
  c.open();
  await Promise.all([c.running, ...later]);
  ada.close();
  bob.close();
});
