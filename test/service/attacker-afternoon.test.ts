// An attacker's afternoon (s33, probe33): attacks on what came after s24 that no other test tried, each
// against a real service on 127.0.0.1 with a password user beside the owner. All held on main; kept
// because no other test covers them (checked: retry-turn*.test.ts, auth-roles, permission-waits, people,
// attachments, agent-context, conversation-deleted).
// - retry_turn's prompts: a password user's words never reach a prompt that user may answer, and a
//   password user retrying the owner's message cannot answer its prompts either (turn-runner.ts's
//   ownerAnswersPrompts; retry-turn.test only checks that the user may retry).
// - A workspace whose `.remote-assistant` folder is a link leading out (a cloned repository's, or one a
//   model made): a sent file is not written through it, and no saved prompt is read through it
//   (agent-context covers a linked prompt file, not a linked folder).
// - The conversation-scoped reads added since s24 (list_instructions, list_prompts, get_plan,
//   export_conversation, get_changes, retry_turn) on a deleted conversation's id: not_found.
import assert from 'node:assert/strict';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { uploadAttachment } from '../helpers/attachments';
import { passwordUsers, sessionClient } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { tempDir } from '../helpers/temp';
import type { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
const PASSWORD = 'correct horse battery staple';
let ada: TestClient | undefined;
let outside: { dir: string; cleanup: () => Promise<void> } | undefined;

const svc = useService({
  workspace: true,
  config: async () => ({ model: 'fake-model', permission_mode: 'ask', users: await passwordUsers(PASSWORD, 'ada') }),
  afterStart: async (started) => {
    ada = await sessionClient(started, 'ada', PASSWORD);
  },
});
before(async () => {
  outside = await tempDir('ra-afternoon-outside-');
});
after(async () => {
  ada?.close();
  await outside?.cleanup();
});

async function ok(client: TestClient, frame: Frame): Promise<Frame> {
  const reply = await client.request(frame);
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return reply.data as Frame;
}

/** A chat whose turn fails (the provider refuses the key): its conversation and message ids. */
async function failedChat(client: TestClient, frame: Frame): Promise<{ conversationId: string; messageId: string }> {
  svc.fake.script({ status: 401 });
  const reply = await client.request({ type: 'chat', ...frame });
  assert.equal(reply.status, 'error', JSON.stringify(reply));
  const ended = await client.next((f) => f.event === 'turn.ended' && f.outcome === 'failed');
  const conversationId = String(ended.conversation_id);
  const messages = (await ok(client, { type: 'get_messages', conversation_id: conversationId })).messages as { id: string }[];
  return { conversationId, messageId: messages.at(-1)!.id };
}

/** A retry whose model asks for a tool: the owner is asked, ada may not answer nor is she asked; the owner denies. */
async function retryAsksTheOwnerOnly(retrier: TestClient, owner: TestClient, conversationId: string, messageId: string): Promise<void> {
  svc.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'done' });
  const asked = owner.next((f) => f.event === 'permission.request' && f.conversation_id === conversationId);
  const retry = retrier.request({ type: 'retry_turn', conversation_id: conversationId, message_id: messageId });
  const request = (await asked) as { request_id: string };
  const answer = await ada!.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow' });
  // To anyone but the owner, a prompt only the owner may answer is an unknown one (s36, people-unseen.test.ts).
  assert.equal(answer.code, 'not_found', JSON.stringify(answer));
  const pending = (await ok(ada!, { type: 'list_pending_permissions' })).requests as { request_id: string }[];
  assert.ok(!pending.some((r) => r.request_id === request.request_id), 'not listed to ada');
  await ok(owner, { type: 'permission_response', request_id: request.request_id, decision: 'deny' });
  const answered = await retry;
  assert.equal(answered.status, 'ok', JSON.stringify(answered));
  assert.ok(!ada!.frames.some((f) => f.event === 'permission.request' && f.request_id === request.request_id), 'ada is not sent the prompt');
}

test("attack: a password user's failed message retried by the owner asks the owner alone; ada cannot allow its tool", async () => {
  const owner = await svc.client();
  const { conversationId, messageId } = await failedChat(ada!, { message: 'list my files', client_message_id: 'ada-1' });
  await retryAsksTheOwnerOnly(owner, owner, conversationId, messageId);
  owner.close();
});

test("attack: a password user retrying the owner's failed message cannot answer its prompts either", async () => {
  const owner = await svc.client();
  const { conversationId, messageId } = await failedChat(owner, { message: 'list the files', client_message_id: 'owner-1' });
  await retryAsksTheOwnerOnly(ada!, owner, conversationId, messageId);
  owner.close();
});

test('attack: `.remote-assistant` a link leading out of the workspace: a sent file is not written through it, no prompt is read through it', async () => {
  const owner = await svc.client();
  await mkdir(join(outside!.dir, 'prompts'));
  await writeFile(join(outside!.dir, 'prompts', 'leak.md'), 'OUTSIDE-PROMPT\n');
  await symlink(outside!.dir, join(svc.workspace, '.remote-assistant'));

  const prompts = (await ok(ada!, { type: 'list_prompts' })).prompts as { name: string }[];
  assert.ok(!prompts.some((p) => p.name === 'leak'), JSON.stringify(prompts));

  const bytes = Buffer.from('name,value\nkey,1\n');
  const uploaded = await uploadAttachment((frame) => owner.request(frame), bytes, 'authorized_keys', 'text/plain');
  assert.equal(uploaded.status, 'ok', JSON.stringify(uploaded));
  const before = svc.fake.requests.length;
  svc.fake.script({ text: 'seen' });
  await ok(owner, { type: 'chat', message: 'here is a file', attachments: [(uploaded.data as { attachment_id: string }).attachment_id] });
  assert.deepEqual((await readdir(outside!.dir)).sort(), ['prompts'], 'nothing written outside the workspace');
  const sent = svc.fake.requests.slice(before).find((r) => r.path.startsWith('/v1/chat/completions'))!;
  const said = JSON.stringify((sent.body as { messages: unknown[] }).messages);
  assert.match(said, /could not be saved into the workspace/);
  owner.close();
});

test('ids of a deleted conversation: every conversation-scoped read added since s24 is not_found', async () => {
  const owner = await svc.client();
  const { conversationId, messageId } = await failedChat(owner, { message: 'soon gone' });
  await ok(owner, { type: 'delete_conversation', conversation_id: conversationId });
  const commands: Frame[] = [
    { type: 'list_instructions', conversation_id: conversationId },
    { type: 'list_prompts', conversation_id: conversationId },
    { type: 'get_plan', conversation_id: conversationId },
    { type: 'export_conversation', conversation_id: conversationId, format: 'markdown' },
    { type: 'get_changes', conversation_id: conversationId },
    { type: 'retry_turn', conversation_id: conversationId, message_id: messageId },
    { type: 'list_turn_changes', conversation_id: conversationId },
    { type: 'search_messages', query: 'soon', conversation_id: conversationId },
  ];
  for (const client of [owner, ada!]) {
    for (const frame of commands) {
      const reply = await client.request(frame);
      assert.equal(reply.code, 'not_found', `${String(frame.type)}: ${JSON.stringify(reply)}`);
    }
  }
  owner.close();
});

test('race: a password user deletes the conversation while the owner’s retry streams: the retry ends stopped, nothing comes back, its resend is not_found', async () => {
  const owner = await svc.client();
  const { conversationId, messageId } = await failedChat(owner, { message: 'retry me, then lose me' });
  let release = (): void => undefined;
  const until = new Promise<void>((resolve) => (release = resolve));
  svc.fake.script({ text: 'an answer in three pieces', chunks: 3, holdAfterChunks: { chunks: 1, until } });
  const retryFrame = { type: 'retry_turn', conversation_id: conversationId, message_id: messageId, stream: true, client_retry_id: 'rr-1' };
  const retry = owner.request({ ...retryFrame, id: 'retry-race' });
  await owner.next((f) => f.event === 'chat.delta' && f.conversation_id === conversationId);
  await ok(ada!, { type: 'delete_conversation', conversation_id: conversationId });
  release();
  const answer = await retry;
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  assert.equal((answer.data as { cancelled?: boolean }).cancelled, true, JSON.stringify(answer));
  assert.equal((await owner.request({ type: 'get_messages', conversation_id: conversationId })).code, 'not_found');
  const listed = (await ok(owner, { type: 'list_conversations' })).conversations as { id: string }[];
  assert.ok(!listed.some((c) => c.id === conversationId), 'the reply did not bring it back');
  const resend = await owner.request({ ...retryFrame, id: 'retry-race-2' });
  assert.equal(resend.code, 'not_found', JSON.stringify(resend));
  owner.close();
});
