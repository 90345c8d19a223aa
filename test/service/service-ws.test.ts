import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { version } from '../../package.json';
import { PROTOCOL_VERSION } from '../../src/protocol';
import { TEST_API_KEY } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

const svc = useService({ config: { model: 'fake-model', temperature: 0.5 } });

const authed = () => TestClient.authed(svc.wsUrl, svc.token);

describe('auth handshake', () => {
  test('a wrong token gets invalid_token and close 4401', async () => {
    const client = await TestClient.connect(svc.wsUrl);
    const reply = await client.request({ type: 'auth', token: 'nope' });
    assert.equal(reply.status, 'error');
    assert.equal(reply.code, 'invalid_token');
    assert.equal((await client.waitClose()).code, 4401);
  });

  test('a command before auth is refused and the socket closed', async () => {
    const client = await TestClient.connect(svc.wsUrl);
    const reply = await client.request({ type: 'get_config' });
    assert.equal(reply.code, 'invalid_token');
    assert.equal((await client.waitClose()).code, 4401);
  });

  test('the access token authenticates, echoing the id', async () => {
    const client = await TestClient.connect(svc.wsUrl);
    const reply = await client.request({ type: 'auth', token: svc.token, id: 'a1' });
    assert.deepEqual(reply, { status: 'ok', data: { authenticated: true, expires_in: null, protocol: PROTOCOL_VERSION, server_build: version, acting_as: 'access token' }, id: 'a1' });
    client.close();
  });
});

describe('config commands', () => {
  test('get_config answers the public fields and never the key', async () => {
    const client = await authed();
    const reply = await client.request({ type: 'get_config' });
    assert.equal(reply.status, 'ok');
    const data = reply.data as Record<string, unknown>;
    assert.equal(data.provider, 'openai');
    assert.equal(data.model, 'fake-model');
    assert.equal(data.temperature, 0.5);
    assert.equal(data.permission_mode, 'ask');
    assert.equal(data.api_key_set, true);
    assert.ok(!JSON.stringify(reply).includes(TEST_API_KEY));
    assert.ok(!JSON.stringify(reply).includes(svc.token));
    client.close();
  });

  test('update_config writes valid fields, reports changed ones, and tells other clients', async () => {
    const a = await authed();
    const b = await authed();
    const reply = await a.request({ type: 'update_config', config: { temperature: 1.2, model: 'fake-model' } });
    assert.deepEqual(reply.data, { updated_fields: ['temperature'] });
    const event = await b.next((f) => f.event === 'config.changed');
    assert.deepEqual(event.fields, ['temperature']);
    const file = JSON.parse(await readFile(join(svc.dataDir, 'service.json'), 'utf8'));
    assert.equal(file.temperature, 1.2);
    assert.equal(file.api_key, TEST_API_KEY, 'other fields kept');
    const config = await a.request({ type: 'get_config' });
    assert.equal((config.data as Record<string, unknown>).temperature, 1.2);
    a.close();
    b.close();
  });

  test('update_config is all or nothing, naming the bad fields', async () => {
    const client = await authed();
    const before = await readFile(join(svc.dataDir, 'service.json'), 'utf8');
    for (const config of [{ temperature: 3, model: 'other' }, { temperature: 'hot' }, { colour: 'blue', model: 'other' }, { permission_mode: 'sometimes' }]) {
      const reply = await client.request({ type: 'update_config', config });
      assert.equal(reply.code, 'invalid_request', JSON.stringify(config));
      const named = Object.keys(config).find((k) => k !== 'model')!;
      assert.match(String(reply.error), new RegExp(named));
    }
    assert.equal(await readFile(join(svc.dataDir, 'service.json'), 'utf8'), before);
    const wrongType = await client.request({ type: 'update_config', config: 'temperature=1' });
    assert.equal(wrongType.code, 'invalid_request');
    client.close();
  });
});

describe('chat and history', () => {
  test('a chat without conversation_id starts a conversation; with it, continues it', async () => {
    const client = await authed();
    const first = await client.request({ type: 'chat', message: 'hello there' });
    assert.equal(first.status, 'ok', JSON.stringify(first));
    const data = first.data as { response: string; conversation_id: string };
    assert.equal(data.response, 'echo: hello there');
    assert.ok(data.conversation_id);

    const second = await client.request({ type: 'chat', message: 'and again', conversation_id: data.conversation_id });
    assert.equal((second.data as { conversation_id: string }).conversation_id, data.conversation_id);
    const lastRequest = svc.fake.requests.at(-1)!.body as { messages: { role: string; content: string }[]; model: string };
    assert.equal(lastRequest.messages[0].role, 'system', 'the built-in system prompt comes first');
    assert.deepEqual(
      withoutNote(lastRequest.messages)
        .slice(1)
        .map((m) => [m.role, m.content]),
      [
        ['user', 'hello there'],
        ['assistant', 'echo: hello there'],
        ['user', 'and again'],
      ],
    );
    assert.equal(lastRequest.model, 'fake-model');

    const messages = await client.request({ type: 'get_messages', conversation_id: data.conversation_id });
    const list = (messages.data as { messages: Record<string, unknown>[] }).messages;
    assert.deepEqual(
      list.map((m) => m.role),
      ['user', 'assistant', 'user', 'assistant'],
    );
    for (const m of list) {
      assert.equal(typeof m.id, 'string');
      assert.match(String(m.timestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const limited = await client.request({ type: 'get_messages', conversation_id: data.conversation_id, limit: 2 });
    assert.deepEqual(
      (limited.data as { messages: { content: string }[] }).messages.map((m) => m.content),
      ['and again', 'echo: and again'],
    );

    const conversations = await client.request({ type: 'list_conversations' });
    const found = (conversations.data as { conversations: Record<string, unknown>[] }).conversations.find((c) => c.id === data.conversation_id);
    assert.equal(found?.title, 'hello there');
    assert.equal(found?.source, 'ws');
    client.close();
  });

  test('an unknown conversation_id is not_found', async () => {
    const client = await authed();
    for (const frame of [
      { type: 'chat', message: 'x', conversation_id: 'no-such-id' },
      { type: 'get_messages', conversation_id: 'no-such-id' },
      { type: 'delete_conversation', conversation_id: 'no-such-id' },
    ]) {
      const reply = await client.request(frame);
      assert.equal(reply.code, 'not_found', frame.type);
    }
    client.close();
  });

  test('stream: true sends chat.delta events, then one final response with the whole text', async () => {
    const client = await authed();
    svc.fake.script({ text: 'one two three four five', chunks: 5 });
    const reply = await client.request({ type: 'chat', message: 'stream please', stream: true, id: 's1' });
    const deltas = client.frames.filter((f) => f.event === 'chat.delta' && f.id === 's1');
    assert.ok(deltas.length >= 2, `expected several deltas, got ${deltas.length}`);
    assert.equal(deltas.map((d) => d.delta).join(''), 'one two three four five');
    assert.equal((reply.data as { response: string }).response, 'one two three four five');
    for (const d of deltas) assert.equal(d.conversation_id, (reply.data as { conversation_id: string }).conversation_id);
    client.close();
  });

  test('several commands at once on one socket are each answered with their id', async () => {
    const client = await authed();
    const ids = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
    ids.forEach((id, i) => client.send(i % 2 ? { type: 'get_config', id } : { type: 'chat', message: `m${i}`, id }));
    const replies = await Promise.all(ids.map((id) => client.next((f) => f.id === id && 'status' in f)));
    replies.forEach((reply, i) => {
      assert.equal(reply.status, 'ok');
      if (i % 2 === 0) assert.equal((reply.data as { response: string }).response, `echo: m${i}`);
    });
    client.close();
  });

  test('messages of one conversation run one at a time, in order', async () => {
    const client = await authed();
    const start = await client.request({ type: 'chat', message: 'first' });
    const conversation_id = (start.data as { conversation_id: string }).conversation_id;
    svc.fake.script({ text: 'slow reply', delayMs: 300 });
    client.send({ type: 'chat', message: 'second', conversation_id, id: 'q2' });
    client.send({ type: 'chat', message: 'third', conversation_id, id: 'q3' });
    await client.next((f) => f.id === 'q2' && 'status' in f);
    await client.next((f) => f.id === 'q3' && 'status' in f);
    const third = svc.fake.requests.findLast((r) => JSON.stringify(r.body).includes('third'))!.body as { messages: { role: string; content: string }[] };
    assert.deepEqual(
      withoutNote(third.messages)
        .map((m) => m.content)
        .slice(-3),
      ['second', 'slow reply', 'third'],
      'third saw the reply to second',
    );
    client.close();
  });

  test('get_messages validates limit: 0, -1, 1.5 and "ten" are refused, 10000 is clamped', async () => {
    const client = await authed();
    const start = await client.request({ type: 'chat', message: 'limits' });
    const conversation_id = (start.data as { conversation_id: string }).conversation_id;
    for (const limit of [0, -1, 1.5, 'ten', null]) {
      const reply = await client.request({ type: 'get_messages', conversation_id, limit });
      assert.equal(reply.code, 'invalid_request', `limit ${JSON.stringify(limit)}`);
      assert.match(String(reply.error), /limit/);
    }
    const clamped = await client.request({ type: 'get_messages', conversation_id, limit: 10000 });
    assert.equal(clamped.status, 'ok');
    assert.equal((clamped.data as { messages: unknown[] }).messages.length, 2);
    client.close();
  });

  test('delete_conversation removes it from the list and its messages', async () => {
    const client = await authed();
    const start = await client.request({ type: 'chat', message: 'to delete' });
    const conversation_id = (start.data as { conversation_id: string }).conversation_id;
    assert.deepEqual((await client.request({ type: 'delete_conversation', conversation_id })).data, { deleted: true });
    const list = await client.request({ type: 'list_conversations', limit: 500 });
    assert.ok(!(list.data as { conversations: { id: string }[] }).conversations.some((c) => c.id === conversation_id));
    assert.equal((await client.request({ type: 'get_messages', conversation_id })).code, 'not_found');
    client.close();
  });

  test('list_conversations: newest activity first, limit and before cursor', async () => {
    const client = await authed();
    const ids: string[] = [];
    for (const message of ['c-one', 'c-two', 'c-three']) {
      ids.push(((await client.request({ type: 'chat', message })).data as { conversation_id: string }).conversation_id);
    }
    await client.request({ type: 'chat', message: 'bump', conversation_id: ids[0] });
    const page = (await client.request({ type: 'list_conversations', limit: 2 })).data as { conversations: { id: string; updated_at: string }[] };
    assert.deepEqual(
      page.conversations.map((c) => c.id),
      [ids[0], ids[2]],
    );
    const next = (await client.request({ type: 'list_conversations', limit: 1, before: page.conversations[1].updated_at })).data as { conversations: { id: string }[] };
    assert.deepEqual(
      next.conversations.map((c) => c.id),
      [ids[1]],
    );
    client.close();
  });
});

describe('bad input gets a clear error and the connection survives', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['chat without message', { type: 'chat' }, /message/],
    ['chat with a number message', { type: 'chat', message: 42 }, /message/],
    ['chat with an empty message', { type: 'chat', message: '' }, /message/],
    ['chat with a numeric conversation_id', { type: 'chat', message: 'x', conversation_id: 7 }, /conversation_id/],
    ['chat with stream "yes"', { type: 'chat', message: 'x', stream: 'yes' }, /stream/],
    ['update_config without config', { type: 'update_config' }, /config/],
    ['update_config with an array', { type: 'update_config', config: [1] }, /config/],
    ['get_messages without conversation_id', { type: 'get_messages' }, /conversation_id/],
    ['get_messages with a numeric conversation_id', { type: 'get_messages', conversation_id: 5 }, /conversation_id/],
    ['list_conversations with limit "x"', { type: 'list_conversations', limit: 'x' }, /limit/],
    ['list_conversations with a numeric cursor', { type: 'list_conversations', before: 3 }, /before/],
    ['delete_conversation without id', { type: 'delete_conversation' }, /conversation_id/],
    ['permission_response with a bad decision', { type: 'permission_response', request_id: 'r', decision: 'maybe' }, /decision/],
    ['an unknown type', { type: 'launch_rockets' }, /unknown command type: launch_rockets/],
    ['a numeric type', { type: 5 }, /type/],
    ['no type', { message: 'hi' }, /type/],
  ];
  for (const [name, frame, pattern] of cases) {
    test(name, async () => {
      const client = await authed();
      const reply = await client.request(frame);
      assert.equal(reply.status, 'error');
      assert.equal(reply.code, 'invalid_request');
      assert.match(String(reply.error), pattern);
      assert.equal((await client.request({ type: 'get_config' })).status, 'ok', 'still usable');
      client.close();
    });
  }

  test('unknown extra fields on a known command are ignored', async () => {
    const client = await authed();
    const reply = await client.request({ type: 'get_config', colour: 'blue' });
    assert.equal(reply.status, 'ok');
    client.close();
  });

  test('non-JSON, non-object and binary frames get invalid_request and the socket stays open', async () => {
    const client = await authed();
    for (const frame of ['{not json', '[1,2]', '"text"', '42', 'null']) {
      client.send(frame);
      const reply = await client.next((f) => f.status === 'error');
      assert.equal(reply.code, 'invalid_request', frame);
    }
    client.send(Buffer.from([1, 2, 3]));
    const binary = await client.next((f) => f.status === 'error');
    assert.match(String(binary.error), /binary/);
    assert.equal((await client.request({ type: 'get_config' })).status, 'ok');
    assert.equal(client.closed, undefined);
    client.close();
  });

  test('a 2 MiB frame gets payload_too_large and close 1009', async () => {
    const client = await authed();
    client.send(JSON.stringify({ type: 'chat', message: 'x'.repeat(2 * 1024 * 1024) }));
    const reply = await client.next((f) => f.status === 'error');
    assert.equal(reply.code, 'payload_too_large');
    assert.equal((await client.waitClose()).code, 1009);
  });
});

describe('provider failures', () => {
  test('a dead provider gives a clear server_error without the key, and keeps the user message', async () => {
    const client = await authed();
    const start = await client.request({ type: 'chat', message: 'before failure' });
    const conversation_id = (start.data as { conversation_id: string }).conversation_id;
    svc.fake.script({ status: 401 }, { status: 500 }, { status: 500 }, { status: 500 });
    for (const expected of [/openai/, /openai/]) {
      const reply = await client.request({ type: 'chat', message: 'will fail', conversation_id });
      assert.equal(reply.status, 'error');
      assert.equal(reply.code, 'server_error');
      assert.match(String(reply.error), expected);
      assert.ok(!JSON.stringify(reply).includes(TEST_API_KEY));
      assert.ok(!JSON.stringify(reply).includes(TEST_API_KEY.slice(0, 8)));
    }
    const messages = (await client.request({ type: 'get_messages', conversation_id })).data as { messages: { role: string; content: string }[] };
    assert.deepEqual(
      messages.messages.map((m) => m.role),
      ['user', 'assistant', 'user', 'user'],
    );
    const log = await readFile(join(svc.dataDir, 'service.log'), 'utf8');
    assert.ok(!log.includes(TEST_API_KEY), 'the log never holds the key');
    assert.ok(!log.includes(svc.token), 'the log never holds the access token');
    client.close();
  });
});
