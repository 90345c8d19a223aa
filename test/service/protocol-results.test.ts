// Every command's answer, as a real service gives it over a real socket, parses with the command's
// result schema (src/protocol/results.ts). The schemas are what the web UI and the extension are typed
// from, so a handler that answers a different shape fails here, not on a phone.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { CommandResults, type CommandType } from '../../src/protocol';
import { postJson } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { tempDir, waitFor } from '../helpers/temp';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';
import { RELAY_TOKEN, startRelay, type RunningRelay } from '../helpers/relay-link-harness';
import { startFakePushService, type FakePushService } from '../helpers/fake-push-service';
import https from 'node:https';
import { join } from 'node:path';
import { sha256 } from '../helpers/attachments';
import { addWorktree, git, isolateGitConfig, makeRepo, TestWorktrees, writeFiles, type TestRepo } from '../helpers/git-repo';

const SECRET = 'results-secret-0123456789abcdef';

let relay: RunningRelay;
let receiver: WebhookReceiver;
let push: FakePushService;
let client: TestClient;
let gitIsolation: Awaited<ReturnType<typeof isolateGitConfig>>;
let repo: TestRepo;
const worktrees = new TestWorktrees();
/** Each command type whose answer was checked, so the last test can tell none was left out. */
const checked = new Set<CommandType>();

const svc = useService({
  workspace: true,
  config: async () => {
    relay = await startRelay();
    receiver = await startWebhookReceiver({ secret: SECRET });
    receiver.setDefault({ status: 503 });
    push = await startFakePushService();
    gitIsolation = await isolateGitConfig();
    repo = await makeRepo({ 'a.txt': 'a\n' });
    return {
      model: 'fake-model',
      permission_mode: 'ask',
      channels: [
        { name: 'relay', type: 'websocket', url: relay.wsUrl, auth_token: RELAY_TOKEN },
        { name: 'webhook', type: 'webhook', accounts: { acct: { incoming_path: '/in', outgoing_url: receiver.url('/out'), secret: SECRET, retry_for_seconds: 1 } } },
      ],
    };
  },
  options: () => ({
    webhook: { retryBaseMs: 50, retryMaxMs: 200, timeoutMs: 300 },
    relay: { baseDelayMs: 50, maxDelayMs: 300 },
    push: { allowPrivateEndpoints: true, agent: new https.Agent({ ca: push.ca }) },
    worktrees,
  }),
  afterStart: async (started) => {
    client = await TestClient.connect(started.wsUrl);
  },
});

after(async () => {
  client?.close();
  await receiver?.close();
  await relay?.close();
  await push?.close();
  await repo?.cleanup();
  await gitIsolation?.cleanup();
});

/** Sends a command, asserts it was answered ok, and parses its data with the command's result schema. */
async function answer<T extends CommandType>(frame: { type: T } & Record<string, unknown>) {
  const reply = await client.request(frame);
  assert.equal(reply.status, 'ok', `${frame.type}: ${JSON.stringify(reply)}`);
  const parsed = CommandResults[frame.type].safeParse(reply.data);
  assert.ok(parsed.success, `${frame.type} answered ${JSON.stringify(reply.data)}: ${parsed.error?.message}`);
  // The schema describes every field the service sends: nothing is stripped as unknown.
  assert.deepEqual(parsed.data, reply.data, `${frame.type}: a field the schema does not know`);
  checked.add(frame.type);
  return parsed.data as never;
}

test('auth, config and tools', async () => {
  await answer({ type: 'auth', token: svc.token });
  await answer({ type: 'get_config' });
  const updated: { updated_fields: string[] } = await answer({ type: 'update_config', config: { temperature: 0.5 } });
  assert.deepEqual(updated.updated_fields, ['temperature']);
  const tools: { tools: unknown[] } = await answer({ type: 'list_tools' });
  assert.ok(tools.tools.length > 0);
  const instructions: { files: unknown[] } = await answer({ type: 'list_instructions' });
  assert.ok(Array.isArray(instructions.files));
  const prompts: { prompts: unknown[] } = await answer({ type: 'list_prompts' });
  assert.ok(Array.isArray(prompts.prompts));
});

test('chat with a tool the user allows, its history, then delete', async () => {
  svc.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'x' } }] }, { text: 'written' });
  client.send({ type: 'chat', message: 'write a.txt', id: 'chat-1' });
  const request = await client.next((f) => f.event === 'permission.request');
  const pending: { requests: { request_id: string }[] } = await answer({ type: 'list_pending_permissions' });
  assert.deepEqual(
    pending.requests.map((r) => r.request_id),
    [request.request_id],
  );
  await answer({ type: 'permission_response', request_id: request.request_id, decision: 'allow' });
  const done = await client.next((f) => f.id === 'chat-1' && 'status' in f);
  assert.equal(done.status, 'ok');
  assert.ok(CommandResults.chat.safeParse(done.data).success, JSON.stringify(done.data));
  const conversationId = (done.data as { conversation_id: string }).conversation_id;

  const listed: { conversations: { id: string }[] } = await answer({ type: 'list_conversations' });
  assert.ok(listed.conversations.some((c) => c.id === conversationId));
  const plan: { plan: unknown[] } = await answer({ type: 'get_plan', conversation_id: conversationId });
  assert.deepEqual(plan.plan, [], 'the model wrote no plan');
  const usage: { days: { models: unknown[] }[] } = await answer({ type: 'get_usage', days: 7 });
  assert.equal(usage.days[0]?.models.length, 1, 'the chat counted under its model');
  const history: { messages: { role: string; tool_kind?: string; ok?: boolean }[] } = await answer({ type: 'get_messages', conversation_id: conversationId, include_tools: true });
  assert.deepEqual(
    history.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_kind, m.ok]),
    [
      ['call', undefined],
      ['result', true],
    ],
  );
  const plain: { response: string } = await answer({ type: 'chat', message: 'again', conversation_id: conversationId });
  assert.match(plain.response, /echo: again/);
  const compacted: { message: { role: string; compaction?: { status: string } }; context_used: number; context_window: number } = await answer({
    type: 'compact_conversation',
    conversation_id: conversationId,
    focus: 'the file names',
  });
  assert.deepEqual([compacted.message.role, compacted.message.compaction?.status], ['summary', 'summarised']);
  assert.ok(compacted.context_used > 0 && compacted.context_used < compacted.context_window);
  const removed: { removed: boolean } = await answer({ type: 'remove_queued', conversation_id: conversationId, client_message_id: 'not-waiting' });
  assert.equal(removed.removed, false);
  const turns: { turns: { message_id: string | null; files: number }[] } = await answer({ type: 'list_turn_changes', conversation_id: conversationId });
  assert.equal(turns.turns[0]?.files, 1);
  const undone: { files: { outcome?: string }[] } = await answer({ type: 'undo_turn', conversation_id: conversationId, message_id: turns.turns[0].message_id!, confirm: true });
  assert.equal(undone.files[0]?.outcome, 'deleted');
  const followed: { seq: number; reset: boolean } = await answer({ type: 'follow_conversation', conversation_id: conversationId });
  assert.equal(followed.reset, false);
  await answer({ type: 'unfollow_conversation', conversation_id: conversationId });
  await answer({ type: 'delete_conversation', conversation_id: conversationId });
});

test('cancel: a running chat, cancelled, answers cancelled', async () => {
  svc.fake.script({ text: 'a b c d e f g h i j', chunks: 10, chunkDelayMs: 300 });
  client.send({ type: 'chat', message: 'long answer please', id: 'long', stream: true });
  await client.next((f) => f.event === 'chat.delta' && f.id === 'long');
  // The cancel carries the chat's id, so both answers do: the cancel's is the one with `cancelled` alone.
  client.send({ type: 'cancel', id: 'long' });
  const answers = [await client.next((f) => f.id === 'long' && 'status' in f), await client.next((f) => f.id === 'long' && 'status' in f)];
  const cancelAnswer = answers.find((f) => !('response' in (f.data as object)));
  const chatAnswer = answers.find((f) => 'response' in (f.data as object));
  assert.deepEqual(CommandResults.cancel.parse(cancelAnswer?.data), { cancelled: true });
  assert.equal(CommandResults.chat.parse(chatAnswer?.data).cancelled, true);
  checked.add('cancel');
});

test('retry_turn: a cancelled turn answered again', async () => {
  svc.fake.script({ text: 'a b c d e f g h i j', chunks: 10, chunkDelayMs: 300 });
  client.send({ type: 'chat', message: 'cut short, then retried', id: 'cut', stream: true });
  const delta = await client.next((f) => f.event === 'chat.delta' && f.id === 'cut');
  client.send({ type: 'cancel', conversation_id: delta.conversation_id });
  await client.next((f) => f.id === 'cut' && 'status' in f && 'response' in (f.data as object));
  const conversation_id = String(delta.conversation_id);
  const { messages }: { messages: { id: string }[] } = await answer({ type: 'get_messages', conversation_id });
  const retried: { response: string } = await answer({ type: 'retry_turn', conversation_id, message_id: messages[0].id, client_retry_id: 'results-1' });
  assert.match(retried.response, /echo: cut short/);
});

test('webhook outbox: list_deliveries and retry_delivery', async () => {
  const posted = await postJson(`${svc.httpUrl}/in`, { message: 'hello' }, { 'x-service-secret': SECRET });
  assert.equal(posted.status, 202, posted.text);
  let failedId = '';
  await waitFor(
    async () => {
      const listed: { deliveries: { id: string; status: string }[] } = await answer({ type: 'list_deliveries', status: 'failed' });
      failedId = listed.deliveries[0]?.id ?? '';
      return failedId !== '';
    },
    'a failed delivery',
    10_000,
    50,
  );
  receiver.setDefault({ status: 200 });
  await answer({ type: 'retry_delivery', delivery_id: failedId });
});

test('relay: relay_status and create_pairing', async () => {
  await waitFor(() => svc.service.relay.status().find((s) => s.state === 'online'), 'relay link online', 10_000);
  const status: { relays: { state: string }[] } = await answer({ type: 'relay_status' });
  assert.equal(status.relays[0].state, 'online');
  await answer({ type: 'create_pairing' });
});

test('devices: a LAN pairing secret spent for a device, listed, revoked', async () => {
  const { pairing_secret }: { pairing_secret: string } = await answer({ type: 'create_lan_pairing' });
  const phone = await TestClient.connect(svc.wsUrl);
  const hello = await phone.request({ type: 'auth', pairing_secret, device_id: 'results-phone' });
  assert.equal(CommandResults.auth.safeParse(hello.data).success, true, JSON.stringify(hello));
  await answer({ type: 'list_devices' });
  await answer({ type: 'revoke_device', device_id: 'results-phone' });
  phone.close();
});

test('web push: devices, settings, test, visibility', async () => {
  await answer({ type: 'push_info' });
  const { device }: { device: { device_id: string } } = await answer({ type: 'push_subscribe', device_id: 'phone-1', device_name: 'Android Chrome', subscription: push.subscription() });
  await answer({ type: 'push_settings', device_id: device.device_id, content_blind: true });
  await answer({ type: 'list_push_devices' });
  await answer({ type: 'client_state', device_id: device.device_id, visible: false });
  await answer({ type: 'push_test' });
  await answer({ type: 'push_unsubscribe', device_id: device.device_id });
});

test('history: search_messages, export_conversation, backup', async () => {
  const { conversation_id }: { conversation_id: string } = await answer({ type: 'chat', message: 'results kingfisher' });
  const found: { hits: { conversation_id: string }[] } = await answer({ type: 'search_messages', query: 'kingfisher' });
  assert.ok(found.hits.some((h) => h.conversation_id === conversation_id));
  await answer({ type: 'export_conversation', conversation_id, format: 'json' });
  const dest = await tempDir('ra-results-backup-');
  try {
    await answer({ type: 'backup', path: join(dest.dir, 'copy') });
  } finally {
    await dest.cleanup();
  }
});

test('attachments: an upload in one chunk, read back', async () => {
  const bytes = Buffer.from('a small file');
  const { attachment_id }: { attachment_id: string } = await answer({ type: 'attachment_begin', name: 'small.txt', mime: 'text/plain', size: bytes.length, sha256: sha256(bytes) });
  await answer({ type: 'attachment_chunk', attachment_id, index: 0, data: bytes.toString('base64') });
  await answer({ type: 'attachment_end', attachment_id });
  await answer({ type: 'get_attachment', attachment_id });
});

test('audit: list_audit and verify_audit', async () => {
  // The tests before recorded acts (a permission answer, a pairing, a revocation, a backup): their entries parse too.
  await answer({ type: 'list_audit', limit: 500 });
  await answer({ type: 'verify_audit' });
});

test('review and land: a worktree conversation reviewed, commented on, committed, landed, pushed and discarded', async () => {
  svc.fake.script({ text: 'started' });
  const { conversation_id }: { conversation_id: string } = await answer({ type: 'chat', message: 'worktree work' });
  const wt = addWorktree(repo, conversation_id);
  worktrees.rows.set(conversation_id, wt);
  await writeFiles(wt.path, { 'a.txt': 'a changed\n', 'b.txt': 'b\n' });
  const changes: { files: { path: string; hunks: { id: string }[] }[] } = await answer({ type: 'get_changes', conversation_id });
  await answer({ type: 'revert_changes', conversation_id, path: 'b.txt' });
  svc.fake.script({ text: 'noted' });
  await answer({ type: 'comment_on_change', conversation_id, path: 'a.txt', line: 1, hunk_id: changes.files.find((f) => f.path === 'a.txt')!.hunks[0].id, comment: 'why?' });
  svc.fake.script({ text: 'Change a' });
  await answer({ type: 'draft_commit_message', conversation_id });
  await answer({ type: 'commit_changes', conversation_id, message: 'Change a' });
  await answer({ type: 'land_changes', conversation_id, method: 'merge' });
  const bare = join(repo.worktrees, '..', 'remote.git');
  git(repo.repo, 'init', '-q', '--bare', bare);
  git(repo.repo, 'remote', 'add', 'origin', bare);
  await answer({ type: 'push_changes', conversation_id });
  await answer({ type: 'discard_changes', conversation_id, confirm: true });
});

test('every command type was answered and checked against its schema', () => {
  assert.deepEqual([...checked].sort(), Object.keys(CommandResults).sort());
});
