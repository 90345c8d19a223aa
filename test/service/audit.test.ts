/**
 * The audit log (issue 20, "A record of who did what"; docs/protocol.md, "Audit log"), against the real
 * service over real sockets: every kind of act appears with the right person and place, secrets and
 * notes never appear in it, a password user cannot read it, the chain verifies, and a burst of failed
 * logins is one counted entry that erases nothing.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { AuditEntry, AuditKind } from '../../src/protocol';
import { hashPassword } from '../../src/transport/auth/passwords';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, startService, TEST_API_KEY, type RunningService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';
import { generateKeyPair } from '../../src/tunnel';
import { RELAY_TOKEN, RelayClient, startRelay, type RunningRelay } from '../helpers/relay-link-harness';

const PASSWORD = 'correct horse battery staple';
const HOOK_SECRET = 'audit-hook-secret-0123456789abcdef';
const NEW_API_KEY = 'sk-audit-new-key-5a4b3c2d1e0f';
const NOTE = 'please use the staging folder instead';
/** Long enough for seven failed logins on a loaded machine; the test waits for the window to close. */
const BURST_WINDOW_MS = 2_000;

type Frame = Record<string, unknown>;

function ok(reply: Frame): Frame {
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return reply.data as Frame;
}

describe('the audit log records who did what from where', () => {
  let fake: FakeOpenAI;
  let receiver: WebhookReceiver;
  let workspace: { dir: string; cleanup: () => Promise<void> };
  let svc: RunningService;
  let owner: TestClient;
  let ada: TestClient;
  const clients: TestClient[] = [];

  before(async () => {
    fake = await startFakeOpenAI();
    receiver = await startWebhookReceiver({ secret: HOOK_SECRET });
    workspace = await tempDir('ra-audit-ws-');
    svc = await startService(
      {
        base_url: fake.url,
        workspace: workspace.dir,
        permission_mode: 'ask',
        users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }],
        channels: { webhook: { accounts: { builder: { incoming_path: '/hook', outgoing_url: receiver.url('/out'), secret: HOOK_SECRET, tools: 'allow' } } } },
      },
      { toolTimeoutMs: 10_000, loginBurstWindowMs: BURST_WINDOW_MS, webhook: { retryBaseMs: 50, retryMaxMs: 200, timeoutMs: 1_000 } },
    );
    owner = await TestClient.authed(svc.wsUrl, svc.token);
    const login = await postJson(`${svc.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
    assert.equal(login.status, 200, login.text);
    ada = await TestClient.authed(svc.wsUrl, (login.body!.data as { token: string }).token);
    clients.push(owner, ada);
  });
  after(async () => {
    for (const client of clients) client.close();
    await svc?.dispose();
    await receiver?.close();
    await fake?.close();
    await workspace?.cleanup();
  });

  const all = async (): Promise<AuditEntry[]> => ok(await owner.request({ type: 'list_audit', limit: 500 })).entries as AuditEntry[];
  const ofKind = async (kind: AuditKind) => (await all()).filter((e) => e.kind === kind);
  const newest = async (kind: AuditKind) => {
    const found = await ofKind(kind);
    assert.ok(found.length > 0, `no ${kind} entry: ${JSON.stringify(await all())}`);
    return found[0];
  };

  /** Pairs a phone on the LAN; returns its socket (as the device) and its token. */
  async function pairPhone(name: string) {
    const { pairing_secret } = ok(await owner.request({ type: 'create_lan_pairing' })) as { pairing_secret: string };
    const phone = await TestClient.connect(svc.wsUrl);
    clients.push(phone);
    const hello = ok(await phone.request({ type: 'auth', pairing_secret, device_id: `dev-${name.replace(/[^A-Za-z0-9]/g, '-')}`, device_name: name }));
    return { phone, token: hello.device_token as string, deviceId: hello.device_id as string };
  }

  test('a pairing, a device connecting and a password sign-in: the device by name, the user by name, from the LAN address', async () => {
    const { token } = await pairPhone('Pixel');
    const paired = await newest('device.paired');
    assert.deepEqual(paired.person, { kind: 'device', name: 'Pixel' });
    assert.deepEqual(paired.place, { via: 'lan', address: '127.0.0.1' });
    assert.equal(paired.detail.device_id, 'dev-Pixel');

    const again = await TestClient.authed(svc.wsUrl, token);
    clients.push(again);
    const connected = await waitFor(async () => (await ofKind('login')).find((e) => e.person.kind === 'device'), 'the device login');
    assert.deepEqual(connected.person, { kind: 'device', name: 'Pixel' });
    assert.equal(connected.place.via, 'lan');

    const signIn = (await ofKind('login')).find((e) => e.person.kind === 'user')!;
    assert.deepEqual(signIn.person, { kind: 'user', name: 'ada' });
    assert.deepEqual(signIn.place, { via: 'lan', address: '127.0.0.1' });
    assert.equal(signIn.detail.method, 'password');
    assert.equal((await ofKind('login')).filter((e) => e.person.kind === 'owner').length, 0, 'owner-token sockets are not each a login entry');
  });

  test("permission answers: who (a device by name, the access token), the tool, its subject, the preview hash, the decision, a note by presence only; allow_always's rule", async () => {
    const { phone } = await pairPhone('Tablet');
    fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'hello\n' } }] }, { text: 'written' });
    owner.send({ type: 'chat', message: 'write a', id: 'w1' });
    const request = await phone.next((f) => f.event === 'permission.request');
    ok(await phone.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow_always' }));
    const chat = ok(await owner.next((f) => f.id === 'w1' && 'status' in f));
    const answered = await waitFor(async () => (await ofKind('permission.answer')).find((e) => e.detail.request_id === request.request_id), 'the answer entry');
    assert.deepEqual(answered.person, { kind: 'device', name: 'Tablet' });
    assert.deepEqual(answered.place, { via: 'lan', address: '127.0.0.1' });
    assert.equal(answered.conversation_id, chat.conversation_id);
    assert.equal(answered.detail.tool, 'write_file');
    assert.equal(answered.detail.subject, 'a.txt');
    assert.match(String(answered.detail.preview_sha256), /^[0-9a-f]{64}$/);
    assert.equal(answered.detail.decision, 'allow_always');
    assert.equal(answered.detail.note_present, false);
    assert.equal(answered.detail.rule, 'write_file:a.txt');
    assert.match(answered.summary, /^Allowed always write_file a\.txt \(always: rule write_file:a\.txt\)$/);
    const rule = await waitFor(async () => (await ofKind('rule.added')).find((e) => e.detail.rule === 'write_file:a.txt'), 'the rule entry');
    assert.deepEqual(rule.person, { kind: 'device', name: 'Tablet' }, "the rule is the answerer's");

    fake.script({ tool_calls: [{ name: 'run_command', arguments: { command: 'echo hi' } }] }, { text: 'ok' });
    owner.send({ type: 'chat', message: 'run it', id: 'r1' });
    const second = await owner.next((f) => f.event === 'permission.request' && f.tool === 'run_command');
    ok(await owner.request({ type: 'permission_response', request_id: second.request_id, decision: 'deny', note: NOTE }));
    await owner.next((f) => f.id === 'r1' && 'status' in f);
    const denied = await waitFor(async () => (await ofKind('permission.answer')).find((e) => e.detail.request_id === second.request_id), 'the deny entry');
    assert.deepEqual(denied.person, { kind: 'owner', name: 'access token' });
    assert.equal(denied.detail.subject, 'echo hi');
    assert.equal(denied.detail.decision, 'deny');
    assert.equal(denied.detail.note_present, true);
    assert.ok(!JSON.stringify(await all()).includes(NOTE), "the note's words are not kept");
  });

  test("config changes: the mode (from, to), rules removed, fields by name only (never a secret), a password user's change, a hand edit", async () => {
    ok(await owner.request({ type: 'update_config', config: { permission_mode: 'allow' } }));
    const mode = await newest('mode.changed');
    assert.deepEqual(mode.detail, { mode_from: 'ask', mode_to: 'allow' });
    assert.deepEqual(mode.person, { kind: 'owner', name: 'access token' });

    ok(await owner.request({ type: 'update_config', config: { api_key: NEW_API_KEY, permission_rules: { allow: [], deny: ['run_command:rm *'] } } }));
    const changed = await newest('config.changed');
    assert.deepEqual(changed.detail.fields, ['api_key']);
    const removed = (await ofKind('rule.removed')).map((e) => e.detail.rule);
    assert.ok(removed.includes('write_file:a.txt'), JSON.stringify(removed));
    assert.ok((await ofKind('rule.added')).some((e) => e.detail.rule === 'run_command:rm *' && e.detail.effect === 'deny'));
    const text = JSON.stringify(await all());
    for (const secret of [NEW_API_KEY, TEST_API_KEY, svc.token, HOOK_SECRET]) assert.ok(!text.includes(secret), 'a secret in the audit log');

    ok(await ada.request({ type: 'update_config', config: { model: 'fake-model-large' } }));
    const byAda = await newest('config.changed');
    assert.deepEqual(byAda.person, { kind: 'user', name: 'ada' });
    assert.deepEqual(byAda.detail.fields, ['model']);

    const file = join(svc.dataDir, 'service.json');
    const raw = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    await writeFile(file, JSON.stringify({ ...raw, temperature: 0.3 }, null, 2));
    const handEdit = await waitFor(async () => (await ofKind('config.changed')).find((e) => (e.detail.fields as string[]).includes('temperature')), 'the hand edit entry');
    assert.deepEqual(handEdit.person, { kind: 'owner', name: 'service.json edited on disk' });
    ok(await owner.request({ type: 'update_config', config: { permission_mode: 'ask' } }));
  });

  test("an undo, a backup and a revocation, each by the owner; a webhook account's tool run by the account", async () => {
    fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'b.txt', content: 'bee\n' } }] }, { text: 'done' });
    owner.send({ type: 'chat', message: 'write b', id: 'u1' });
    const ask = await owner.next((f) => f.event === 'permission.request' && (f.arguments as Frame).path === 'b.txt');
    ok(await owner.request({ type: 'permission_response', request_id: ask.request_id, decision: 'allow' }));
    const { conversation_id } = ok(await owner.next((f) => f.id === 'u1' && 'status' in f)) as { conversation_id: string };
    const messages = ok(await owner.request({ type: 'get_messages', conversation_id })).messages as { id: string; role: string }[];
    const reply = messages.filter((m) => m.role === 'assistant').at(-1)!;
    ok(await owner.request({ type: 'undo_turn', conversation_id, message_id: reply.id, confirm: true }));
    const undone = await newest('turn.undone');
    assert.equal(undone.conversation_id, conversation_id);
    assert.deepEqual(undone.detail.files, [{ path: 'b.txt', outcome: 'deleted' }]);
    assert.deepEqual(undone.person, { kind: 'owner', name: 'access token' });

    const dest = await tempDir('ra-audit-backup-');
    try {
      const done = ok(await owner.request({ type: 'backup', path: join(dest.dir, 'copy') }));
      const backup = await newest('backup');
      assert.equal(backup.detail.path, done.path);
      assert.deepEqual(backup.place, { via: 'lan', address: '127.0.0.1' });
    } finally {
      await dest.cleanup();
    }

    const { deviceId } = await pairPhone('Old phone');
    ok(await owner.request({ type: 'revoke_device', device_id: deviceId }));
    const revoked = await newest('device.revoked');
    assert.equal(revoked.detail.device_name, 'Old phone');
    assert.deepEqual(revoked.person, { kind: 'owner', name: 'access token' });

    fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'hook.txt', content: 'from the hook\n' } }] }, { text: 'hooked' });
    const sent = await postJson(`${svc.httpUrl}/hook`, { message: 'write hook' }, { 'x-service-secret': HOOK_SECRET });
    assert.equal(sent.status, 202, sent.text);
    const run = await waitFor(async () => (await ofKind('webhook.tool_run'))[0], 'the webhook tool run entry', 10_000);
    assert.deepEqual(run.person, { kind: 'webhook', name: 'builder' });
    assert.deepEqual(run.place, { via: 'webhook' });
    assert.equal(run.detail.tool, 'write_file');
    assert.equal(run.detail.subject, 'hook.txt');
    assert.equal(run.detail.ran, true);
  });

  test('failed logins from one address are one counted entry per window', async () => {
    await Promise.all(
      Array.from({ length: 7 }, async (_, i) => {
        const stranger = await TestClient.connect(svc.wsUrl);
        assert.equal((await stranger.request({ type: 'auth', token: `wrong-${i}` })).code, 'invalid_token');
        await stranger.waitClose();
      }),
    );
    const burst = await waitFor(async () => (await ofKind('login.failed_burst'))[0], 'the burst entry', 10_000);
    assert.equal(burst.detail.count, 7);
    assert.equal(burst.detail.login, 'token');
    assert.deepEqual(burst.place, { via: 'lan', address: '127.0.0.1' });
    assert.equal((await ofKind('login.failed_burst')).length, 1);
  });

  test('a password user may neither read nor verify the log, nor hear of its entries; the owner hears each', async () => {
    for (const type of ['list_audit', 'verify_audit']) assert.equal((await ada.request({ type })).code, 'unauthorized', type);
    assert.equal(ada.frames.filter((f) => f.event === 'audit.appended').length, 0);
    const heard = owner.frames.filter((f) => f.event === 'audit.appended').map((f) => (f.entry as AuditEntry).seq);
    const recorded = (await all()).map((e) => e.seq);
    assert.ok(heard.length > 0);
    assert.ok(heard.every((seq) => recorded.includes(seq)));
  });

  test('filters and paging; the whole chain verifies, numbered without gaps', async () => {
    const entries = await all();
    assert.deepEqual(
      entries.map((e) => e.seq),
      entries.map((_, i) => entries.length - i),
      'newest first, 1..N without gaps',
    );
    const answers = ok(await owner.request({ type: 'list_audit', kind: 'permission.answer' })).entries as AuditEntry[];
    assert.ok(answers.length >= 3 && answers.every((e) => e.kind === 'permission.answer'));
    const two = ok(await owner.request({ type: 'list_audit', kind: ['device.paired', 'device.revoked'] })).entries as AuditEntry[];
    assert.deepEqual([...new Set(two.map((e) => e.kind))].sort(), ['device.paired', 'device.revoked']);
    const byAda = ok(await owner.request({ type: 'list_audit', person: 'ada' })).entries as AuditEntry[];
    assert.ok(byAda.length >= 2 && byAda.every((e) => e.person.name === 'ada'));
    const undone = entries.find((e) => e.kind === 'turn.undone')!;
    const inConversation = ok(await owner.request({ type: 'list_audit', conversation_id: undone.conversation_id })).entries as AuditEntry[];
    assert.ok(inConversation.length >= 2 && inConversation.every((e) => e.conversation_id === undone.conversation_id));
    const future = ok(await owner.request({ type: 'list_audit', since: new Date(Date.now() + 60_000).toISOString() })).entries as AuditEntry[];
    assert.equal(future.length, 0);
    const first = ok(await owner.request({ type: 'list_audit', limit: 3 }));
    assert.equal(first.next_before, entries[2].seq);
    const next = ok(await owner.request({ type: 'list_audit', limit: 3, before: first.next_before }));
    assert.deepEqual(
      (next.entries as AuditEntry[]).map((e) => e.seq),
      entries.slice(3, 6).map((e) => e.seq),
    );
    assert.equal((await owner.request({ type: 'list_audit', limit: 501 })).code, 'invalid_request');
    assert.equal((await owner.request({ type: 'list_audit', kind: 'chat' })).code, 'invalid_request');
    assert.deepEqual(ok(await owner.request({ type: 'verify_audit' })), { ok: true, entries: entries.length, first_bad_seq: null, reason: null });
  });
});

describe('through the relay', () => {
  let fake: FakeOpenAI;
  let relay: RunningRelay;
  let svc: RunningService;
  const sockets: { close(): void }[] = [];

  before(async () => {
    fake = await startFakeOpenAI();
    relay = await startRelay();
    svc = await startService(
      { base_url: fake.url, permission_mode: 'ask', channels: [{ name: 'relay', type: 'websocket', url: relay.wsUrl, auth_token: RELAY_TOKEN }] },
      { relay: { baseDelayMs: 50, maxDelayMs: 300 } },
    );
  });
  after(async () => {
    for (const socket of sockets) socket.close();
    await svc?.dispose();
    await relay?.close();
    await fake?.close();
  });

  test('a phone paired and answering through the relay is recorded by its name, from the relay', async () => {
    const owner = await TestClient.authed(svc.wsUrl, svc.token);
    sockets.push(owner);
    await waitFor(async () => (ok(await owner.request({ type: 'relay_status' })).relays as { state: string }[])[0]?.state === 'online', 'the relay link', 10_000);
    const info = ok(await owner.request({ type: 'create_pairing' })) as { machine_id: string; machine_key: string; pairing_secret: string };
    const phone = await RelayClient.connect(`${relay.wsUrl}?machine_id=${info.machine_id}`);
    sockets.push(phone);
    await phone.handshake(generateKeyPair(), info.machine_key, info.pairing_secret);
    ok(await phone.request({ type: 'auth', pairing_secret: info.pairing_secret, device_name: 'Relayed Pixel' }));
    fake.script({ tool_calls: [{ name: 'run_command', arguments: { command: 'echo relayed' } }] }, { text: 'ran' });
    owner.send({ type: 'chat', message: 'run', id: 'c1' });
    const request = await phone.next((f) => f.event === 'permission.request');
    ok(await phone.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow' }));
    await owner.next((f) => f.id === 'c1' && 'status' in f);
    const entries = ok(await owner.request({ type: 'list_audit' })).entries as AuditEntry[];
    const paired = entries.find((e) => e.kind === 'device.paired')!;
    assert.deepEqual(paired.person, { kind: 'device', name: 'Relayed Pixel' });
    assert.deepEqual(paired.place, { via: 'relay', address: 'relay:relay' });
    const answer = entries.find((e) => e.kind === 'permission.answer')!;
    assert.deepEqual(answer.person, { kind: 'device', name: 'Relayed Pixel' });
    assert.equal(answer.place.via, 'relay');
    assert.equal(answer.detail.subject, 'echo relayed');
  });
});

describe('log flooding', () => {
  test('2,000 failed logins erase no earlier audit entry and add one counted entry, not 2,000', { timeout: 120_000 }, async () => {
    const svc = await startService({}, { loginBurstWindowMs: 60_000 });
    const owner = await TestClient.authed(svc.wsUrl, svc.token);
    try {
      ok(await owner.request({ type: 'update_config', config: { permission_mode: 'deny' } }));
      const before = ok(await owner.request({ type: 'list_audit' })).entries as AuditEntry[];
      assert.equal(before.length, 1);
      for (let batch = 0; batch < 40; batch++) {
        await Promise.all(
          Array.from({ length: 50 }, async (_, i) => {
            // Past the login limit the upgrade itself is refused (429): the attempt is counted all the same.
            const stranger = await TestClient.connect(svc.wsUrl).catch(() => undefined);
            if (!stranger) return;
            await stranger.request({ type: 'auth', token: `guess-${batch}-${i}` });
            await stranger.waitClose();
          }),
        );
      }
      // The window closes when the service stops (or after a minute): stop, then read the store.
      owner.close();
      await svc.stop();
      const { openStore } = await import('../../src/store');
      const store = await openStore(svc.dataDir);
      try {
        const after = store.audit.list({ limit: 500 }).entries;
        assert.deepEqual(after.at(-1), before[0], 'the earlier entry is there, unchanged');
        const bursts = after.filter((e) => e.kind === 'login.failed_burst');
        assert.equal(bursts.length, 1, JSON.stringify(after.map((e) => e.summary)));
        assert.equal(bursts[0].detail.count, 2000);
        assert.equal(bursts[0].detail.login, 'token');
        assert.equal(bursts[0].detail.refused, 1990, 'all but the first ten refused unchecked (the login limit)');
        assert.equal(after.length, 2);
        assert.equal((await store.audit.verify()).ok, true);
      } finally {
        await store.close();
      }
    } finally {
      owner.close();
      await svc.dispose();
    }
  });
});
