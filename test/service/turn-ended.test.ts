// turn.ended (docs/protocol.md, "Events"): every user client hears when a turn ends, whoever started it
// (a chat of another client, a webhook message), with its outcome; a failure's text is short and holds
// no secret. The event hub's observer tap (what the push notifier listens to) sees every broadcast event
// with the filter the clients get it by.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { ServiceEvent } from '../../src/protocol';
import { postJson, TEST_API_KEY } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';

let receiver: WebhookReceiver;
const svc = useService({
  config: async () => {
    receiver = await startWebhookReceiver();
    return { model: 'fake-model', channels: { webhook: { accounts: { alpha: { incoming_path: '/hooks/alpha', outgoing_url: receiver.url('/alpha') } } } } };
  },
});
after(() => receiver?.close());

const ended = (id: string) => (f: Record<string, unknown>) => f.event === 'turn.ended' && f.conversation_id === id;

test('a chat turn that answers is announced to every client as answered', async () => {
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const reply = await phone.request({ type: 'chat', message: 'hello' });
    const id = (reply.data as { conversation_id: string }).conversation_id;
    const event = await editor.next(ended(id));
    const [asked] = ((await phone.request({ type: 'get_messages', conversation_id: id })).data as { messages: { id: string }[] }).messages;
    // `instructions` (s33): the files in force, as list_instructions' fingerprint (turn-ended-signals tests it).
    const { instructions, ...said } = event;
    assert.equal(typeof instructions, 'string');
    assert.deepEqual(said, { event: 'turn.ended', conversation_id: id, source: 'ws', outcome: 'answered', message_id: asked.id, files_written: 0 });
  } finally {
    phone.close();
    editor.close();
  }
});

test('a failed turn is announced as failed with a short reason and no secret', async () => {
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    svc.fake.script({ status: 401 });
    const reply = await phone.request({ type: 'chat', message: 'fail please' });
    assert.equal(reply.status, 'error');
    const event = await editor.next((f) => f.event === 'turn.ended' && f.outcome === 'failed');
    assert.equal(event.source, 'ws');
    assert.match(String(event.error), /credentials.*401/);
    assert.ok(!JSON.stringify(event).includes(TEST_API_KEY.slice(-8)), 'no piece of the api key');
    assert.ok(!JSON.stringify(event).includes('127.0.0.1'), 'not the provider address');
  } finally {
    phone.close();
    editor.close();
  }
});

test('a cancelled turn is announced as cancelled', async () => {
  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    svc.fake.script({ text: 'a b c d e f g h i j', chunks: 10, chunkDelayMs: 300 });
    phone.send({ type: 'chat', message: 'long one', id: 'c1', stream: true });
    const delta = await phone.next((f) => f.event === 'chat.delta' && f.id === 'c1');
    phone.send({ type: 'cancel', id: 'c1' });
    const event = await phone.next(ended(String(delta.conversation_id)));
    assert.equal(event.outcome, 'cancelled');
  } finally {
    phone.close();
  }
});

test('a webhook turn is announced to the user clients (source webhook:<account>), and the tap sees it with its filter', async () => {
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  const tapped: { event: ServiceEvent; filter?: (s: never) => boolean }[] = [];
  const stop = svc.service.events.observe((event, filter) => tapped.push({ event, filter: filter as never }));
  try {
    const accepted = await postJson(`${svc.httpUrl}/hooks/alpha`, { message: 'from a webhook' });
    assert.equal(accepted.status, 202);
    const id = (accepted.body!.data as { conversation_id: string }).conversation_id;
    const event = await editor.next(ended(id));
    const { message_id: messageId, instructions, ...rest } = event;
    assert.equal(typeof instructions, 'string');
    assert.deepEqual(rest, { event: 'turn.ended', conversation_id: id, source: 'webhook:alpha', outcome: 'answered', files_written: 0 });
    assert.equal(typeof messageId, 'string', 'the webhook message the turn answered');
    const seen = tapped.find((t) => t.event.event === 'turn.ended' && t.event.conversation_id === id);
    assert.ok(seen, 'the observer saw the turn end');
    const other = { id: 'x', source: { kind: 'webhook', account: 'beta' }, canAnswerPermissions: false, send: () => undefined };
    assert.equal(seen.filter?.(other as never), false, 'the filter keeps another webhook account out');
  } finally {
    stop();
    editor.close();
  }
});

test("a webhook turn that fails for good is announced as failed; the reason is the callback's (kind and status)", async () => {
  const editor = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    svc.fake.script({ status: 401 });
    const accepted = await postJson(`${svc.httpUrl}/hooks/alpha`, { message: 'this one fails' });
    const id = (accepted.body!.data as { conversation_id: string }).conversation_id;
    const event = await editor.next(ended(id));
    assert.equal(event.source, 'webhook:alpha');
    assert.equal(event.outcome, 'failed');
    assert.match(String(event.error), /credentials \(HTTP 401\)/);
  } finally {
    editor.close();
  }
});
