// Nothing typed is lost (issue 12): a chat resent with the same client_message_id is answered with the
// original result and never stored or run twice (a dropped answer, concurrent duplicates, a restart);
// messages waiting behind a running turn are visible to every client and removable; the hello carries
// the protocol version; list_conversations rows carry the last message's first line.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PROTOCOL_VERSION } from '../../src/protocol';
import { serve } from '../helpers/cli';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { writeConfig } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const svc = useService({ config: { model: 'fake-model' } });

type Row = { id: string; last_message?: string | null; queued?: { client_message_id: string | null; preview: string }[] };

async function messagesOf(client: TestClient, conversationId: string): Promise<string[]> {
  const reply = await client.request({ type: 'get_messages', conversation_id: conversationId, include_tools: true });
  return (reply.data as { messages: { content: string }[] }).messages.map((m) => m.content);
}

const completions = () => svc.fake.requests.filter((r) => r.path.startsWith('/v1/chat/completions')).length;

test('a chat resent after its answer was lost (socket closed, reconnect) is answered with the original result, stored and run once', async () => {
  const before = completions();
  svc.fake.script({ text: 'the one answer', delayMs: 400 });
  const first = await TestClient.authed(svc.wsUrl, svc.token);
  first.send({ type: 'chat', id: 'c1', message: 'do it once', client_message_id: 'msg-dropped-1' });
  await svc.fake.waitFor(() => completions() === before + 1);
  first.close();
  await first.waitClose();

  const again = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    // Still running: the resend waits for the first turn and gets its result.
    const resent = await again.request({ type: 'chat', message: 'do it once', client_message_id: 'msg-dropped-1' });
    assert.equal(resent.status, 'ok', JSON.stringify(resent));
    const data = resent.data as { response: string; conversation_id: string };
    assert.equal(data.response, 'the one answer');
    // Finished: a later resend is answered from what was stored.
    const late = await again.request({ type: 'chat', message: 'do it once', client_message_id: 'msg-dropped-1' });
    assert.deepEqual(late.data, resent.data);
    assert.equal(completions(), before + 1, 'the model ran once');
    assert.deepEqual(await messagesOf(again, data.conversation_id), ['do it once', 'the one answer'], 'one stored turn');
  } finally {
    again.close();
  }
});

test('concurrent duplicates of one chat (two sockets, same client_message_id) run once and get the same answer', async () => {
  const before = completions();
  svc.fake.script({ text: 'shared answer', delayMs: 200 });
  const a = await TestClient.authed(svc.wsUrl, svc.token);
  const b = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const frame = { type: 'chat', message: 'twice at once', client_message_id: 'msg-concurrent-1' };
    const [ra, rb] = await Promise.all([a.request({ ...frame }), b.request({ ...frame })]);
    assert.equal(ra.status, 'ok', JSON.stringify(ra));
    assert.deepEqual(rb.data, ra.data);
    assert.equal(completions(), before + 1);
    assert.deepEqual(await messagesOf(a, (ra.data as { conversation_id: string }).conversation_id), ['twice at once', 'shared answer']);
  } finally {
    a.close();
    b.close();
  }
});

test('a chat resent after its conversation was deleted is not_found, as after a restart: the deleted reply is never given again, nothing runs', async () => {
  svc.fake.script({ text: 'a reply then deleted' });
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const frame = { type: 'chat', message: 'soon deleted', client_message_id: 'msg-deleted-1' };
    const first = await client.request({ ...frame });
    assert.equal(first.status, 'ok', JSON.stringify(first));
    const conversationId = (first.data as { conversation_id: string }).conversation_id;
    const deleted = await client.request({ type: 'delete_conversation', conversation_id: conversationId });
    assert.equal(deleted.status, 'ok', JSON.stringify(deleted));
    const before = completions();
    const resent = await client.request({ ...frame });
    assert.equal(resent.status, 'error', `the deleted reply was answered again: ${JSON.stringify(resent)}`);
    assert.equal(resent.code, 'not_found');
    assert.match(String(resent.error), /deleted/);
    assert.equal(completions(), before, 'nothing ran');
  } finally {
    client.close();
  }
});

/** A chat of a new conversation, running (its model asked), sent by `a`; `b` another socket of the same person. */
async function runningChat(id: string) {
  const before = completions();
  svc.fake.script({ text: 'reply of a deleted conversation', delayMs: 800 });
  const a = await TestClient.authed(svc.wsUrl, svc.token);
  const b = await TestClient.authed(svc.wsUrl, svc.token);
  const frame = { type: 'chat', message: `deleted while running ${id}`, client_message_id: id };
  const first = a.request({ ...frame }, 20_000);
  await svc.fake.waitFor(() => completions() === before + 1);
  const list = await b.request({ type: 'list_conversations', limit: 1 });
  const conversationId = (list.data as { conversations: { id: string }[] }).conversations[0].id;
  return { a, b, frame, first, conversationId, before };
}

test('a conversation deleted while its turn runs: the turn is stopped first (the sender and a resend waiting on it told so), a later resend is not_found and runs nothing (review28a)', async () => {
  const { a, b, frame, first, conversationId, before } = await runningChat('msg-running-deleted-1');
  try {
    const waiting = b.request({ ...frame }, 20_000);
    assert.equal((await b.request({ type: 'delete_conversation', conversation_id: conversationId })).status, 'ok');
    const [sent, resent] = await Promise.all([first, waiting]);
    assert.equal(sent.status, 'ok', `the sender is told its turn stopped, not an internal error: ${JSON.stringify(sent)}`);
    assert.equal((sent.data as { cancelled?: boolean }).cancelled, true);
    // It waited on the same turn, which ended (stopped) before the conversation went: the same answer.
    assert.deepEqual(resent.data, sent.data);
    const late = await b.request({ ...frame });
    assert.equal(late.code, 'not_found', `the deleted message ran again: ${JSON.stringify(late)}`);
    assert.equal(completions(), before + 1, 'the model ran once');
  } finally {
    a.close();
    b.close();
  }
});

test('a different message under a used client_message_id is refused (invalid_request); an overlong id too', async () => {
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const first = await client.request({ type: 'chat', message: 'original', client_message_id: 'msg-reused-1' });
    assert.equal(first.status, 'ok');
    const before = completions();
    const other = await client.request({ type: 'chat', message: 'something else', client_message_id: 'msg-reused-1' });
    assert.equal(other.status, 'error');
    assert.equal(other.code, 'invalid_request');
    assert.match(String(other.error), /client_message_id/);
    const long = await client.request({ type: 'chat', message: 'x', client_message_id: 'a'.repeat(200) });
    assert.equal(long.code, 'invalid_request');
    assert.equal(completions(), before, 'neither ran');
  } finally {
    client.close();
  }
});

test('a message waiting behind a running turn is listed as queued to every client and can be removed before it starts', async () => {
  const sender = await TestClient.authed(svc.wsUrl, svc.token);
  const observer = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const start = await sender.request({ type: 'chat', message: 'start' });
    const id = (start.data as { conversation_id: string }).conversation_id;
    const before = completions();
    svc.fake.script({ text: 'slow answer', delayMs: 1500 });
    const running = sender.request({ type: 'chat', message: 'long one', conversation_id: id, client_message_id: 'run-1' });
    await svc.fake.waitFor(() => completions() === before + 1);
    const waiting = sender.request({ type: 'chat', message: 'queued one\nsecond line', conversation_id: id, client_message_id: 'wait-1' });
    const update = await observer.next((f) => f.event === 'conversation.updated' && ((f.conversation as Row).queued?.length ?? 0) > 0);
    assert.deepEqual((update.conversation as Row).queued, [{ client_message_id: 'wait-1', preview: 'queued one' }]);
    const listed = await observer.request({ type: 'list_conversations' });
    const row = (listed.data as { conversations: Row[] }).conversations.find((c) => c.id === id)!;
    assert.deepEqual(row.queued, [{ client_message_id: 'wait-1', preview: 'queued one' }]);

    const removed = await observer.request({ type: 'remove_queued', conversation_id: id, client_message_id: 'wait-1' });
    assert.deepEqual(removed.data, { removed: true });
    const answer = await waiting;
    assert.equal(answer.status, 'ok', JSON.stringify(answer));
    assert.equal((answer.data as { cancelled?: boolean }).cancelled, true);
    const cleared = await observer.next((f) => f.event === 'conversation.updated' && f.conversation_id === id && (f.conversation as Row).queued?.length === 0);
    assert.ok(cleared);
    const gone = await observer.request({ type: 'remove_queued', conversation_id: id, client_message_id: 'wait-1' });
    assert.deepEqual(gone.data, { removed: false });

    assert.equal(((await running).data as { response: string }).response, 'slow answer');
    await waitFor(async () => (await messagesOf(observer, id)).length === 4, 'the running turn stored');
    assert.deepEqual(await messagesOf(observer, id), ['start', 'echo: start', 'long one', 'slow answer'], 'the removed message was never stored');
    assert.equal(completions(), before + 1, 'nor run');
  } finally {
    sender.close();
    observer.close();
  }
});

test('the hello carries the protocol version and build; a client of another protocol is told to update', async () => {
  const plain = await TestClient.connect(svc.wsUrl);
  const older = await TestClient.connect(svc.wsUrl);
  const newer = await TestClient.connect(svc.wsUrl);
  try {
    const hello = await plain.request({ type: 'auth', token: svc.token, protocol: PROTOCOL_VERSION });
    const data = hello.data as { protocol: number; server_build: string; update?: string };
    assert.ok(Number.isInteger(data.protocol) && data.protocol === PROTOCOL_VERSION);
    assert.match(data.server_build, /^\d+\.\d+\.\d+/);
    assert.equal(data.update, undefined);
    const old = await older.request({ type: 'auth', token: svc.token, protocol: PROTOCOL_VERSION - 1 });
    assert.equal(old.status, 'ok');
    assert.equal((old.data as { update?: string }).update, 'client');
    const ahead = await newer.request({ type: 'auth', token: svc.token, protocol: PROTOCOL_VERSION + 1 });
    assert.equal((ahead.data as { update?: string }).update, 'service');
  } finally {
    plain.close();
    older.close();
    newer.close();
  }
});

test('list_conversations rows carry the last message first line, capped', async () => {
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    svc.fake.script({ text: `${'long '.repeat(60)}\nsecond line` });
    const reply = await client.request({ type: 'chat', message: 'hello there\nmore' });
    const id = (reply.data as { conversation_id: string }).conversation_id;
    const listed = await client.request({ type: 'list_conversations' });
    const row = (listed.data as { conversations: Row[] }).conversations.find((c) => c.id === id)!;
    assert.ok(row.last_message, JSON.stringify(row));
    assert.ok(row.last_message!.startsWith('long long'));
    assert.ok(!row.last_message!.includes('second line'));
    assert.ok([...row.last_message!].length <= 120);
  } finally {
    client.close();
  }
});

test('after a restart (real CLI, killed mid-turn) a resend is answered from the store: the finished turn with its reply, the interrupted one with a clear status; nothing runs again', async () => {
  const provider = await startFakeOpenAI();
  const { dir, cleanup } = await tempDir('ra-outbox-');
  await writeConfig(dir, { provider: 'openai', model: 'fake-model', base_url: provider.url });
  let proc = await serve(dir);
  try {
    const url = `ws://127.0.0.1:${proc.port}/ws`;
    let client = await TestClient.authed(url, svc.token);
    provider.script({ text: 'finished before the restart' }, { hang: true });
    const done = await client.request({ type: 'chat', message: 'first', client_message_id: 'r-done' });
    const id = (done.data as { conversation_id: string }).conversation_id;
    client.send({ type: 'chat', id: 'hanging', message: 'second', conversation_id: id, client_message_id: 'r-cut' });
    await provider.waitFor((r) => r.length === 2);
    proc.child.kill('SIGKILL');
    await proc.exited;

    proc = await serve(dir);
    client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, svc.token);
    const again = await client.request({ type: 'chat', message: 'first', client_message_id: 'r-done' });
    assert.deepEqual(again.data, done.data);
    const cut = await client.request({ type: 'chat', message: 'second', conversation_id: id, client_message_id: 'r-cut' });
    assert.equal(cut.status, 'ok', JSON.stringify(cut));
    assert.deepEqual(cut.data, { response: '', conversation_id: id, interrupted: true });
    assert.equal(provider.requests.length, 2, 'nothing ran again');
    assert.deepEqual(await messagesOf(client, id), ['first', 'finished before the restart', 'second']);
    client.close();
  } finally {
    proc.child.kill('SIGTERM');
    await proc.exited;
    await provider.close();
    await cleanup();
  }
});
