// The editor's context sent with a chat (issue 14, "Give it the editor's context"): `chat` carries a
// `context` array (a selection or a file: path, range, text); the provider receives it as a delimited
// block before the user's words, in that turn and later ones; it is stored with the user message, so
// get_messages and chat.message show it; too much context is refused with a clear error, storing nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_CONTEXT_CHARS } from '../../src/protocol';
import { type RecordedRequest } from '../helpers/fake-openai';
import { useService } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

let client: TestClient;
const svc = useService({
  config: { model: 'fake-model' },
  afterStart: async (started) => {
    client = await started.client();
  },
});

const completions = () => svc.fake.requests.filter((r) => r.path.startsWith('/v1/chat/completions'));
/** The user messages the provider received in a request, as text. */
const userTexts = (request: RecordedRequest): string[] =>
  withoutNote(request.body.messages as { role: string; content: unknown }[])
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

const selection = { kind: 'selection', path: 'src/math.ts', range: { start_line: 3, end_line: 5 }, text: 'export function add(a: number, b: number) {\n  return a + b;\n}' };
const file = { kind: 'file', path: 'notes/todo.md', text: 'Fence inside: ```\nnot the end\n```' };

test('a chat with a selection and a file: the provider receives both, delimited, before the message; history shows the chips', async () => {
  const before = completions().length;
  const reply = await client.request({ type: 'chat', message: 'What does add do?', context: [selection, file] });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  const conversationId = (reply.data as { conversation_id: string }).conversation_id;
  const sent = completions()[before]!;
  const [user] = userTexts(sent);
  assert.ok(user, 'a user message reached the provider');
  assert.ok(user.includes(selection.text), `the selected text reached the provider:\n${user}`);
  assert.ok(user.includes('src/math.ts') && user.includes('lines 3-5'), 'with its file and line range');
  assert.ok(user.includes(file.text) && user.includes('notes/todo.md'), 'and the file');
  // The file's own ``` does not end its block: the fence is longer than any run of backticks inside.
  assert.match(user, /````\n/);
  assert.ok(user.trimEnd().endsWith('What does add do?'), 'the message comes after the context block');
  assert.ok(user.indexOf(selection.text) < user.indexOf('What does add do?'));

  const messages = await client.request({ type: 'get_messages', conversation_id: conversationId });
  const stored = (messages.data as { messages: { role: string; content: string; context?: unknown }[] }).messages;
  assert.equal(stored[0]!.role, 'user');
  assert.equal(stored[0]!.content, 'What does add do?', 'the message as typed, the context beside it');
  assert.deepEqual(stored[0]!.context, [selection, file]);
  assert.equal(stored[1]!.context, undefined);

  // A later turn still gives the model what was attached earlier (it is part of that message).
  const next = await client.request({ type: 'chat', message: 'And now?', conversation_id: conversationId });
  assert.equal(next.status, 'ok');
  const later = userTexts(completions().at(-1)!);
  assert.equal(later.length, 2);
  assert.ok(later[0]!.includes(selection.text));
  assert.equal(later[1], 'And now?');
});

test('a follower hears the user message with its context (chat.message)', async () => {
  const first = await client.request({ type: 'chat', message: 'start' });
  const conversationId = (first.data as { conversation_id: string }).conversation_id;
  const follower = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    await follower.request({ type: 'follow_conversation', conversation_id: conversationId });
    const sent = client.request({ type: 'chat', message: 'look', conversation_id: conversationId, context: [selection] });
    const event = await follower.next((f) => f.event === 'chat.message' && (f.message as { role: string }).role === 'user');
    assert.deepEqual((event.message as { context?: unknown }).context, [selection]);
    assert.equal((await sent).status, 'ok');
  } finally {
    follower.close();
  }
});

test('too much context is payload_too_large naming the limit; a malformed item is invalid_request; nothing is stored or run', async () => {
  const before = completions().length;
  const conversations = async () => ((await client.request({ type: 'list_conversations' })).data as { conversations: unknown[] }).conversations.length;
  const count = await conversations();
  const big = { kind: 'file', path: 'big.txt', text: 'x'.repeat(MAX_CONTEXT_CHARS + 1) };
  const tooBig = await client.request({ type: 'chat', message: 'hi', context: [big] });
  assert.equal(tooBig.status, 'error');
  assert.equal(tooBig.code, 'payload_too_large');
  assert.match(String(tooBig.error), new RegExp(`context.*${MAX_CONTEXT_CHARS}`));

  const noPath = await client.request({ type: 'chat', message: 'hi', context: [{ kind: 'selection', text: 'a' }] });
  assert.equal(noPath.code, 'invalid_request');
  assert.match(String(noPath.error), /context\.0\.path/);
  const badKind = await client.request({ type: 'chat', message: 'hi', context: [{ kind: 'image', path: 'a', text: 'a' }] });
  assert.equal(badKind.code, 'invalid_request');
  const badRange = await client.request({ type: 'chat', message: 'hi', context: [{ ...selection, range: { start_line: 5, end_line: 2 } }] });
  assert.equal(badRange.code, 'invalid_request');

  assert.equal(completions().length, before, 'the model was not asked');
  assert.equal(await conversations(), count, 'no conversation was made');
});
