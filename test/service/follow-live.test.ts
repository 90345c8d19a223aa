// Issue 12, service side: any user client follows a conversation's live events whoever started the turn,
// catches up after a gap with `after_seq` (exactly what it missed, no duplicate), and any user client
// may cancel a conversation's running turn; a webhook account only its own.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { postJson, startService, type RunningService } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
const SECRET = 'ci-sender-secret-0123456789abcdef';
const LIVE = new Set(['chat.delta', 'tool.call', 'tool.result', 'permission.request', 'permission.resolved', 'chat.message', 'turn.ended']);

let receiver: WebhookReceiver;
const svc = useService({
  workspace: true,
  config: async () => {
    receiver = await startWebhookReceiver({ secret: SECRET });
    return {
      permission_mode: 'ask',
      channels: { webhook: { accounts: { ci: { incoming_path: '/hooks/ci', outgoing_url: receiver.url('/ci'), secret: SECRET, tools: 'ask' } } } },
    };
  },
  options: { webhook: { retryBaseMs: 50, retryMaxMs: 500, timeoutMs: 1_000 } },
});
after(() => receiver?.close());

/** The conversation's live events a client received, without the sender's own request id (which only the sender gets). */
function liveOf(client: TestClient, conversationId: string): Frame[] {
  return client.frames.filter((f) => LIVE.has(String(f.event)) && f.conversation_id === conversationId).map(({ id: _id, ...rest }) => rest);
}

/** Waits until the client has received `count` frames matching `match`, leaving them in its inbox (in order). */
async function received(client: TestClient, match: (f: Frame) => boolean, count = 1): Promise<Frame[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = client.frames.filter(match);
    if (found.length >= count) return found;
    if (Date.now() > deadline) throw new Error(`only ${found.length} of ${count} matching frames arrived`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function newConversation(client: TestClient): Promise<string> {
  const first = await client.request({ type: 'chat', message: 'hello' });
  assert.equal(first.status, 'ok', JSON.stringify(first));
  return (first.data as { conversation_id: string }).conversation_id;
}

test('a follower receives the same deltas, tool and permission events as the sender, in the same order and numbers', async () => {
  const sender = await TestClient.authed(svc.wsUrl, svc.token);
  const follower = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const id = await newConversation(sender);
    const followed = await follower.request({ type: 'follow_conversation', conversation_id: id });
    assert.equal(followed.status, 'ok', JSON.stringify(followed));
    const startSeq = (followed.data as { seq: number }).seq;
    // The first turn's end reached both before the follow: only what follows counts.
    await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
    sender.frames.length = 0;
    follower.frames.length = 0;

    svc.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }], text: 'looking', chunks: 4 }, { text: 'the folder is empty', chunks: 5 });
    const chat = sender.request({ type: 'chat', message: 'what is in the folder?', conversation_id: id, stream: true });
    const [prompt] = await received(follower, (f) => f.event === 'permission.request' && f.conversation_id === id);
    // The follower did not start the turn, and answers its prompt.
    assert.equal((await follower.request({ type: 'permission_response', request_id: prompt.request_id, decision: 'allow' })).status, 'ok');
    const reply = await chat;
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
    await received(sender, (f) => f.event === 'turn.ended' && f.conversation_id === id);

    const seen = liveOf(follower, id);
    assert.deepEqual(seen, liveOf(sender, id), 'the same events, in the same order, with the same numbers');
    assert.deepEqual(
      seen.map((f) => f.seq),
      seen.map((_, i) => startSeq + 1 + i),
      'numbered one by one after the follow, no gap',
    );
    const kinds = seen.map((f) => f.event);
    for (const kind of ['chat.message', 'chat.delta', 'tool.call', 'permission.request', 'permission.resolved', 'tool.result', 'turn.ended'])
      assert.ok(kinds.includes(kind), `${kind} reached the follower`);
    const text = seen
      .filter((f) => f.event === 'chat.delta')
      .map((f) => f.delta)
      .join('');
    assert.equal(text, 'lookingthe folder is empty');
    const stored = seen.filter((f) => f.event === 'chat.message').map((f) => f.message as { role: string; content: string });
    // The text written before the tool call is stored (and announced) as an assistant message of its own.
    assert.deepEqual(
      stored.map((m) => [m.role, m.content]),
      [
        ['user', 'what is in the folder?'],
        ['assistant', 'looking'],
        ['assistant', 'the folder is empty'],
      ],
    );
    // Only the sender's own events carry its request id.
    assert.ok(sender.frames.filter((f) => f.event === 'chat.delta').every((f) => f.id !== undefined));
    assert.ok(follower.frames.filter((f) => f.event === 'chat.delta').every((f) => f.id === undefined));

    assert.equal((await follower.request({ type: 'unfollow_conversation', conversation_id: id })).status, 'ok');
    follower.frames.length = 0;
    await sender.request({ type: 'chat', message: 'again', conversation_id: id, stream: true });
    await sender.next((f) => f.event === 'turn.ended' && f.conversation_id === id);
    assert.equal(follower.frames.filter((f) => f.event === 'chat.delta').length, 0, 'an unfollowed conversation sends no more pieces');
  } finally {
    sender.close();
    follower.close();
  }
});

test('a follower that drops mid-stream and follows again after the last number it saw gets exactly the missing pieces', async () => {
  const sender = await TestClient.authed(svc.wsUrl, svc.token);
  let follower = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const id = await newConversation(sender);
    assert.equal((await follower.request({ type: 'follow_conversation', conversation_id: id })).status, 'ok');
    await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
    follower.frames.length = 0;
    const words = Array.from({ length: 60 }, (_, i) => `w${i} `).join('');
    svc.fake.script({ text: words, chunks: 60, chunkDelayMs: 15 });
    const chat = sender.request({ type: 'chat', message: 'talk', conversation_id: id, stream: true });
    await received(follower, (f) => f.event === 'chat.delta' && f.conversation_id === id, 5);
    const before = liveOf(follower, id);
    const lastSeq = Math.max(...before.map((f) => f.seq as number));
    // Frames that were in flight when it dropped may have arrived after the last read: all it kept counts.
    follower.close();
    await follower.waitClose();
    const firstPart = before
      .filter((f) => f.event === 'chat.delta')
      .map((f) => f.delta)
      .join('');

    follower = await TestClient.authed(svc.wsUrl, svc.token);
    const again = await follower.request({ type: 'follow_conversation', conversation_id: id, after_seq: lastSeq });
    assert.equal(again.status, 'ok', JSON.stringify(again));
    assert.equal((again.data as { reset: boolean }).reset, false);
    const reply = await chat;
    await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
    const rest = liveOf(follower, id);
    assert.deepEqual(
      rest.map((f) => f.seq),
      rest.map((_, i) => lastSeq + 1 + i),
      'from the next number on, no duplicate and no gap',
    );
    const secondPart = rest
      .filter((f) => f.event === 'chat.delta')
      .map((f) => f.delta)
      .join('');
    assert.equal(firstPart + secondPart, (reply.data as { response: string }).response);
    assert.equal(firstPart + secondPart, words);

    const tooOld = await follower.request({ type: 'follow_conversation', conversation_id: id, after_seq: 0 });
    assert.equal((tooOld.data as { reset: boolean }).reset, true, 'a number the service cannot replay from says reload');
    const bad = await follower.request({ type: 'follow_conversation', conversation_id: id, after_seq: -1 });
    assert.equal(bad.code, 'invalid_request');
    const unknown = await follower.request({ type: 'follow_conversation', conversation_id: 'nope' });
    assert.equal(unknown.code, 'not_found');
  } finally {
    sender.close();
    follower.close();
  }
});

test('followers written in turn, one of them not reading during the reply: each gets every piece once, in order (issue 25)', async () => {
  const sender = await TestClient.authed(svc.wsUrl, svc.token);
  const followers = await Promise.all([0, 1, 2].map(() => TestClient.authed(svc.wsUrl, svc.token)));
  const [slow] = followers;
  try {
    const id = await newConversation(sender);
    const starts: number[] = [];
    for (const follower of followers) {
      const followed = await follower.request({ type: 'follow_conversation', conversation_id: id });
      assert.equal(followed.status, 'ok', JSON.stringify(followed));
      await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
      follower.frames.length = 0;
      starts.push((followed.data as { seq: number }).seq);
    }
    const words = Array.from({ length: 40 }, (_, i) => `w${i} `).join('');
    svc.fake.script({ text: words, chunks: 40, chunkDelayMs: 2 });
    // The slow one reads nothing while the reply streams: its frames wait in the sockets, in order.
    slow!.socket.pause();
    const reply = await sender.request({ type: 'chat', message: 'talk', conversation_id: id, stream: true });
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    slow!.socket.resume();
    for (const follower of followers) {
      await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
      const seen = liveOf(follower, id);
      assert.deepEqual(
        seen.map((f) => f.seq),
        seen.map((_, i) => Math.max(...starts) + 1 + i),
        'numbered one by one: no piece twice, none missing',
      );
      assert.equal(
        seen
          .filter((f) => f.event === 'chat.delta')
          .map((f) => f.delta)
          .join(''),
        words,
      );
    }
  } finally {
    sender.close();
    for (const follower of followers) follower.close();
  }
});

test('the sender, written to in turn with its followers, gets every piece and turn.ended before its answer (issue 25)', async () => {
  const sender = await TestClient.authed(svc.wsUrl, svc.token);
  const followers = await Promise.all([0, 1, 2].map(() => TestClient.authed(svc.wsUrl, svc.token)));
  try {
    const id = await newConversation(sender);
    for (const follower of followers) {
      assert.equal((await follower.request({ type: 'follow_conversation', conversation_id: id })).status, 'ok');
      await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
      follower.frames.length = 0;
    }
    // Every frame the sender reads, in the order read: an answer (status) or an event of the conversation.
    const order: string[] = [];
    sender.socket.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as Frame;
      if (frame.status !== undefined) order.push(`answer ${String(frame.id)}`);
      else if (frame.conversation_id === id && LIVE.has(String(frame.event))) order.push(String(frame.event));
    });
    const words = Array.from({ length: 30 }, (_, i) => `w${i} `).join('');
    // Several pieces a read, and pieces read one by one.
    svc.fake.script({ text: words, chunks: 30, chunkDelayMs: 1 });
    const reply = await sender.request({ type: 'chat', message: 'talk', conversation_id: id, stream: true });
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    const answer = order.findIndex((kind) => kind.startsWith('answer'));
    const before = order.slice(0, answer);
    assert.equal(before.filter((kind) => kind === 'chat.delta').length, 30, 'every piece before the answer');
    assert.equal(before.at(-1), 'turn.ended', 'turn.ended last, before the answer');
    assert.deepEqual(
      order.slice(answer + 1).filter((kind) => kind !== 'conversation.updated'),
      [],
      'nothing of the turn after it',
    );
    const mine = sender.frames.filter((f) => f.event === 'chat.delta' && f.conversation_id === id);
    assert.ok(mine.length === 30 && mine.every((f) => f.id === (reply as Frame).id), "the sender's pieces carry its request id");
    for (const follower of followers) {
      await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
      assert.equal(
        liveOf(follower, id)
          .filter((f) => f.event === 'chat.delta')
          .map((f) => f.delta)
          .join(''),
        words,
      );
    }
  } finally {
    sender.close();
    for (const follower of followers) follower.close();
  }
});

test('a webhook turn is followed by a user client, joining while it runs; a webhook account may follow only its own', async () => {
  svc.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'webhook done' });
  const accepted = await postJson(`${svc.httpUrl}/hooks/ci`, { message: 'list the files' }, { 'x-service-secret': SECRET });
  assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
  const id = (accepted.body!.data as { conversation_id: string }).conversation_id;
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  const other = svc.service.openSession({ source: { kind: 'webhook', account: 'other' }, canAnswerPermissions: false, send: () => undefined });
  try {
    const [prompt] = await received(owner, (f) => f.event === 'permission.request' && f.conversation_id === id);
    owner.frames.length = 0;
    const followed = await owner.request({ type: 'follow_conversation', conversation_id: id });
    assert.equal(followed.status, 'ok', JSON.stringify(followed));
    // Joining mid-turn: the running turn so far is replayed (the user's message, the tool call, the prompt).
    const replayed = liveOf(owner, id).filter((f) => typeof f.seq === 'number');
    assert.deepEqual(
      replayed.map((f) => f.event),
      ['chat.message', 'tool.call', 'permission.request'],
    );
    assert.equal(replayed[2].request_id, prompt.request_id);
    assert.equal((await owner.request({ type: 'permission_response', request_id: prompt.request_id, decision: 'allow' })).status, 'ok');
    const [ended] = await received(owner, (f) => f.event === 'turn.ended' && f.conversation_id === id && typeof f.seq === 'number');
    assert.equal(ended.source, 'webhook:ci');
    const live = liveOf(owner, id).filter((f) => typeof f.seq === 'number');
    assert.deepEqual(
      live.map((f) => f.event),
      ['chat.message', 'tool.call', 'permission.request', 'permission.resolved', 'tool.result', 'chat.message', 'turn.ended'],
    );
    assert.equal((live[5].message as { content: string }).content, 'webhook done');

    const refused = (await other.request({ type: 'follow_conversation', conversation_id: id })) as Frame;
    assert.equal(refused.code, 'not_found', 'another webhook account may not follow it');
  } finally {
    owner.close();
    other.close();
  }
});

test('cancel by conversation_id from a client that did not start the turn; a webhook account may not cancel another\u2019s', async () => {
  const sender = await TestClient.authed(svc.wsUrl, svc.token);
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const bot = svc.service.openSession({ source: { kind: 'webhook', account: 'other' }, canAnswerPermissions: false, send: () => undefined });
  try {
    const id = await newConversation(sender);
    svc.fake.script({ text: Array.from({ length: 200 }, (_, i) => `p${i} `).join(''), chunks: 200, chunkDelayMs: 20 });
    const chat = sender.request({ type: 'chat', message: 'a long one', conversation_id: id, stream: true });
    await sender.next((f) => f.event === 'chat.delta' && f.conversation_id === id);

    const refused = (await bot.request({ type: 'cancel', conversation_id: id })) as Frame;
    assert.equal(refused.code, 'not_found', 'a webhook account cannot reach a conversation not its own');
    phone.send({ type: 'cancel' });
    const missing = await phone.next((f) => 'status' in f);
    assert.equal(missing.code, 'invalid_request', 'neither a chat id nor a conversation');

    const cancelled = await phone.request({ type: 'cancel', conversation_id: id });
    assert.deepEqual(cancelled.data, { cancelled: true });
    const reply = await chat;
    assert.equal((reply.data as { cancelled?: boolean }).cancelled, true);
    const idle = await phone.request({ type: 'cancel', conversation_id: id });
    assert.deepEqual(idle.data, { cancelled: false }, 'nothing runs any more');
  } finally {
    sender.close();
    phone.close();
    bot.close();
  }
});

test('a webhook turn cancelled by conversation from a user client ends for good: the sender is told, the turn ended cancelled', async () => {
  svc.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'never said' });
  const accepted = await postJson(`${svc.httpUrl}/hooks/ci`, { message: 'list, then stop' }, { 'x-service-secret': SECRET });
  assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
  const id = (accepted.body!.data as { conversation_id: string }).conversation_id;
  const messageId = (accepted.body!.data as { message_id: string }).message_id;
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    await received(phone, (f) => f.event === 'permission.request' && f.conversation_id === id);
    assert.deepEqual((await phone.request({ type: 'cancel', conversation_id: id })).data, { cancelled: true });
    const [ended] = await received(phone, (f) => f.event === 'turn.ended' && f.conversation_id === id);
    assert.equal(ended.outcome, 'cancelled');
    await receiver.waitFor((r) => r.requests.some((c) => (c.body as { message_id?: string } | undefined)?.message_id === messageId), 'the error callback');
    const callback = receiver.requests.find((c) => (c.body as { message_id?: string } | undefined)?.message_id === messageId)!;
    assert.match(String((callback.body as { error?: string }).error), /cancelled/);
    assert.equal((await phone.request({ type: 'cancel', conversation_id: id })).status, 'ok');
    const state = ((await phone.request({ type: 'list_conversations' })).data as { conversations: { id: string; state: string }[] }).conversations.find((c) => c.id === id);
    assert.equal(state?.state, 'idle', 'nothing left pending to run again');
  } finally {
    phone.close();
  }
});

test('numbers go on rising across a restart: a number kept from before it answers reset, never a wrong replay', async () => {
  const first = await startService({ base_url: svc.fake.url });
  let second: RunningService | undefined;
  try {
    const client = await TestClient.authed(first.wsUrl, first.token);
    const id = await newConversation(client);
    const before = (await client.request({ type: 'follow_conversation', conversation_id: id })).data as { seq: number };
    client.close();
    await first.stop();
    second = await startService({}, { dataDir: first.dataDir, keepConfig: true });
    const again = await TestClient.authed(second.wsUrl, second.token);
    const followed = (await again.request({ type: 'follow_conversation', conversation_id: id, after_seq: before.seq })).data as { seq: number; reset: boolean };
    assert.equal(followed.reset, true, 'the events after it died with the old run: reload the transcript');
    assert.ok(followed.seq >= before.seq, 'the new run numbers above the old one');
    await again.request({ type: 'chat', message: 'after the restart', conversation_id: id });
    const [message] = await received(again, (f) => f.event === 'chat.message' && f.conversation_id === id);
    assert.ok((message.seq as number) > before.seq);
    again.close();
  } finally {
    await second?.stop();
    await first.dispose();
  }
});

test('a client that follows more than 100 conversations still hears a new one: its prompt and reply are not lost', async () => {
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    // Each chat makes its sender follow a new conversation; past the 100 the service keeps when idle,
    // the newest must not be the one forgotten.
    for (let i = 0; i < 101; i++) {
      svc.fake.script({ text: `reply ${i}` });
      const reply = await client.request({ type: 'chat', message: `chat ${i}` });
      assert.equal(reply.status, 'ok', JSON.stringify(reply));
    }
    svc.fake.script({ tool_calls: [{ name: 'list_directory', arguments: { path: '.' } }] }, { text: 'listed' });
    client.send({ type: 'chat', message: 'the 102nd', id: 'many' });
    const request = await client.next((f) => f.event === 'permission.request');
    await client.request({ type: 'permission_response', request_id: request.request_id, decision: 'deny' });
    const answer = await client.next((f) => f.id === 'many' && 'status' in f);
    assert.equal(answer.status, 'ok', JSON.stringify(answer));
    const conversationId = (answer.data as { conversation_id: string }).conversation_id;
    const ended = await client.next((f) => f.event === 'turn.ended' && f.conversation_id === conversationId);
    assert.equal(typeof ended.seq, 'number', 'numbered: the client follows the conversation');
  } finally {
    client.close();
  }
});

test('webhook messages waiting behind a running turn are listed as queued like chats; a webhook account removes only its own', async () => {
  type Row = { id: string; queued: { client_message_id: string | null; preview: string }[] };
  const hook = (body: Frame) => postJson(`${svc.httpUrl}/hooks/ci`, body, { 'x-service-secret': SECRET });
  const observer = await TestClient.authed(svc.wsUrl, svc.token);
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const bot = svc.service.openSession({ source: { kind: 'webhook', account: 'ci' }, canAnswerPermissions: false, send: () => undefined });
  const other = svc.service.openSession({ source: { kind: 'webhook', account: 'other' }, canAnswerPermissions: false, send: () => undefined });
  try {
    const asked = svc.fake.requests.length;
    svc.fake.script({ text: 'first answer', delayMs: 1500 });
    const first = await hook({ message: 'first' });
    assert.equal(first.status, 202, JSON.stringify(first.body));
    const id = (first.body!.data as { conversation_id: string }).conversation_id;
    await svc.fake.waitFor((requests) => requests.length > asked);

    const second = await hook({ message: 'second webhook\nmore lines', conversation_id: id });
    assert.equal(second.status, 202, JSON.stringify(second.body));
    const secondId = (second.body!.data as { message_id: string }).message_id;
    const queuedUpdate = (n: number) => (f: Frame) => f.event === 'conversation.updated' && f.conversation_id === id && (f.conversation as Row).queued.length === n;
    const [listed] = await received(observer, queuedUpdate(1));
    assert.deepEqual((listed.conversation as Row).queued, [{ client_message_id: secondId, preview: 'second webhook' }], 'listed with its message_id, like a chat');
    // A user client continues the webhook conversation meanwhile: its chat waits behind both.
    const phoneChat = phone.request({ type: 'chat', message: 'from the phone', conversation_id: id, client_message_id: 'phone-wait' });
    await received(observer, queuedUpdate(2));
    const rows = (await observer.request({ type: 'list_conversations' })).data as { conversations: Row[] };
    assert.deepEqual(
      rows.conversations.find((c) => c.id === id)!.queued.map((q) => q.client_message_id),
      [secondId, 'phone-wait'],
    );

    assert.deepEqual(
      ((await bot.request({ type: 'remove_queued', conversation_id: id, client_message_id: 'phone-wait' })) as Frame).data,
      { removed: false },
      "the account may not remove the user's message",
    );
    assert.equal(((await other.request({ type: 'remove_queued', conversation_id: id, client_message_id: secondId })) as Frame).code, 'not_found', 'nor another account its messages');
    assert.deepEqual(((await bot.request({ type: 'remove_queued', conversation_id: id, client_message_id: secondId })) as Frame).data, { removed: true }, 'its own');
    await received(observer, (f) => queuedUpdate(1)(f) && (f.conversation as Row).queued[0].client_message_id === 'phone-wait');

    // The sender hears that its message will not be answered; it is never stored nor run.
    const callbackOf = () => receiver.requests.find((c) => (c.body as { message_id?: string } | undefined)?.message_id === secondId);
    await receiver.waitFor(() => callbackOf() !== undefined, 'the removed message\u2019s error callback');
    assert.match(String((callbackOf()!.body as { error?: string }).error), /removed/);
    const reply = await phoneChat;
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    const messages = (await observer.request({ type: 'get_messages', conversation_id: id })).data as { messages: { content: string }[] };
    assert.deepEqual(
      messages.messages.map((m) => m.content),
      ['first', 'first answer', 'from the phone', 'echo: from the phone'],
    );
    const ended = observer.frames.filter((f) => f.event === 'turn.ended' && f.conversation_id === id);
    assert.deepEqual(
      ended.map((f) => f.source),
      ['webhook:ci', 'ws'],
      'the removed message never began a turn',
    );
  } finally {
    observer.close();
    phone.close();
    bot.close();
    other.close();
  }
});

test('attack: following again while already following (with after_seq, or without mid-turn) delivers each seq once on the connection, not the pending events again', async () => {
  const sender = await TestClient.authed(svc.wsUrl, svc.token);
  const follower = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const id = await newConversation(sender);
    const followed = await follower.request({ type: 'follow_conversation', conversation_id: id });
    const startSeq = (followed.data as { seq: number }).seq;
    await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
    follower.frames.length = 0;
    const words = Array.from({ length: 40 }, (_, i) => `w${i} `).join('');
    svc.fake.script({ text: words, chunks: 40, chunkDelayMs: 10 });
    const chat = sender.request({ type: 'chat', message: 'talk', conversation_id: id, stream: true });
    await received(follower, (f) => f.event === 'chat.delta' && f.conversation_id === id, 3);
    // A client that follows again from where it began (what it saw is all after it), then without a number mid-turn.
    assert.equal((await follower.request({ type: 'follow_conversation', conversation_id: id, after_seq: startSeq })).status, 'ok');
    await received(follower, (f) => f.event === 'chat.delta' && f.conversation_id === id, 6);
    assert.equal((await follower.request({ type: 'follow_conversation', conversation_id: id })).status, 'ok');
    await chat;
    await received(follower, (f) => f.event === 'turn.ended' && f.conversation_id === id);
    const seqs = liveOf(follower, id).map((f) => f.seq as number);
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => startSeq + 1 + i),
      'each number once, in order, no gap',
    );
  } finally {
    sender.close();
    follower.close();
  }
});
