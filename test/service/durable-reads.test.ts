// Nothing goes outward before it is durable: a write is applied in sql.js at once and fdatasynced after
// (the journal's sync, maybe deferred to a turn's first outward effect), so a read that answered from
// memory straight away could show a commit a crash then loses. list_conversations, get_messages,
// search_messages and export_conversation wait for the journal's barrier since s14 (user-commit.test.ts);
// get_usage, get_plan, list_turn_changes, list_deliveries, list_audit, list_devices and list_push_devices
// answered at once (s15, trust15).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { datasyncGate } from '../helpers/datasync-gate';
import { withService } from '../helpers/service-fixture';
import { admittedWebhookMessage, NOWHERE_URL as OUT } from '../helpers/webhook-rows';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 120_000 };
const DAY = 24 * 60 * 60_000;

type Frame = Record<string, unknown>;

test('with the journal sync held, seven reads (usage, plan, turn changes, deliveries, audit, devices, push devices) show no commit until it is durable', LIMIT, async (t) => {
  const svc = await withService(t, {
    workspace: true,
    config: { permission_mode: 'allow', channels: { webhook: { accounts: { acct: { incoming_path: '/in', outgoing_url: OUT, secret: 'a-secret-of-some-length' } } } } },
  });
  const reader = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(() => reader.close());
  const { store } = svc.service;
  const first = await reader.request({ type: 'chat', message: 'hello' });
  const id = (first.data as { conversation_id: string }).conversation_id;
  // A webhook message taken in and admitted: its answer (below) writes the delivery.
  const now = Date.now();
  await admittedWebhookMessage(store, { account: 'acct', conversation: 'c-hook', message: 'm-hook' }, now);
  await store.db.flush();

  const gate = await datasyncGate(t);
  gate.hold();
  const day = new Date().toISOString().slice(0, 10);
  // Each applied in memory at once, its fdatasync held.
  const writes = Promise.all([
    store.usage.record({
      message_id: 'held-usage',
      conversation_id: id,
      source: 'lan',
      day,
      updated_at: new Date().toISOString(),
      provider: 'held-provider',
      model: 'held-model',
      input: 7,
      output: 7,
      cached: 0,
      cost_micro: null,
      estimated: false,
      calls: 1,
      context_used: null,
      context_window: null,
    }),
    store.conversations.setPlan(id, [{ text: 'held step', status: 'pending' }]),
    store.fileChanges.recordUnrecorded({ id: 'held-change', conversation_id: id, turn_id: 'held-turn', tool: 'run_command', detail: 'held' }),
    store.webhooks.answer(
      'm-hook',
      { id: 'r-hook', conversation_id: 'c-hook', role: 'assistant', content: 'reply', timestamp: new Date(now).toISOString() },
      { id: 'held-delivery', account: 'acct', url: OUT, body: '{"message":"reply"}', now, give_up_ms: now + DAY },
    ),
    store.audit.append({ kind: 'config.changed', person: { kind: 'owner', name: 'access token' }, place: { via: 'lan', address: '127.0.0.1' }, summary: 'held-audit', detail: {} }),
    store.pushDevices.subscribe(
      {
        device_id: 'held-push',
        device_name: 'held push',
        principal: 'access',
        source: 'ws',
        person: 'owner',
        endpoint: 'https://push.example/held',
        p256dh: 'p',
        auth: 'a',
        events: { prompt: true, finished: true, failed: true, webhook: true, review: true },
        content_blind: false,
      },
      10,
    ),
    store.devices.add({ device_id: 'held-device', device_name: 'held phone', token_hash: '0'.repeat(64), paired_at: new Date().toISOString(), via: 'lan', client_key: null }),
  ]);
  const reads: Record<string, Frame> = {
    usage: { type: 'get_usage', days: 1 },
    plan: { type: 'get_plan', conversation_id: id },
    changes: { type: 'list_turn_changes', conversation_id: id },
    deliveries: { type: 'list_deliveries' },
    audit: { type: 'list_audit' },
    devices: { type: 'list_devices' },
    push: { type: 'list_push_devices' },
  };
  const marks: Record<string, string> = { usage: 'held-model', plan: 'held step', changes: 'held-turn', deliveries: 'held-delivery', audit: 'held-audit', devices: 'held-device', push: 'held-push' };
  const shows = (name: string, frame: Frame): boolean => JSON.stringify(frame).includes(marks[name]!);
  try {
    // Written to the journal's file and applied, not yet durable.
    assert.equal(store.db.get<{ n: number }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE id = 'held-delivery'`)?.n, 1, 'the delivery applied in memory');
    for (const [name, command] of Object.entries(reads)) reader.send({ ...command, id: name });
    // Turns of the loop in which a read not held would have been answered.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const shown = Object.keys(reads).filter((name) => reader.frames.some((f) => f.id === name && 'status' in f && shows(name, f)));
    assert.deepEqual(shown, [], 'answers that showed a commit before it was durable');
  } finally {
    gate.release();
  }
  await writes;
  // Answered once durable; asked again, each shows its commit.
  for (const name of Object.keys(reads)) assert.equal((await reader.next((f) => f.id === name && 'status' in f)).status, 'ok');
  for (const [name, command] of Object.entries(reads)) {
    const answer = await reader.request(command);
    assert.equal(answer.status, 'ok', JSON.stringify(answer));
    assert.ok(shows(name, answer), `${name} once durable: ${JSON.stringify(answer)}`);
  }
});

test('with the journal sync held, the owner is told of an audit entry (audit.appended) only once it is durable', LIMIT, async (t) => {
  const svc = await withService(t, {});
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(() => owner.close());
  const { store } = svc.service;
  await store.db.flush();
  const gate = await datasyncGate(t);
  gate.hold();
  let appended: Promise<unknown>;
  try {
    appended = store.audit.append({ kind: 'config.changed', person: { kind: 'owner', name: 'access token' }, place: { via: 'lan', address: '127.0.0.1' }, summary: 'held-event', detail: {} });
    // Turns of the loop in which an event not held would have been sent.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(
      owner.frames.filter((f) => f.event === 'audit.appended'),
      [],
      'told before it was durable',
    );
  } finally {
    gate.release();
  }
  await appended;
  const told = await owner.next((f) => f.event === 'audit.appended');
  assert.ok(JSON.stringify(told).includes('held-event'), JSON.stringify(told));
});
