// Issue 11's story end to end, service side: the phone subscribed to notifications and went offline; a
// webhook run asks for a tool while no client at all is connected. The request waits, the push service
// receives the prompt, the phone comes back, is sent the waiting request as it authenticates, allows it
// by the id the notification carried, and the run finishes: the tool ran, the webhook's callback went
// out, the prompt's notification was withdrawn and the run's end was pushed.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { startFakePushService, type FakePushService } from '../helpers/fake-push-service';
import { postJson } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';

const SECRET = 'ci-sender-secret-0123456789abcdef';
let push: FakePushService;
let receiver: WebhookReceiver;
const svc = useService({
  workspace: true,
  config: async () => {
    push = await startFakePushService();
    receiver = await startWebhookReceiver({ secret: SECRET });
    return {
      permission_mode: 'ask',
      channels: { webhook: { accounts: { ci: { incoming_path: '/hooks/ci', outgoing_url: receiver.url('/ci'), secret: SECRET, tools: 'ask' } } } },
    };
  },
  options: () => ({ webhook: { retryBaseMs: 50, retryMaxMs: 500, timeoutMs: 1_000 }, push: { allowPrivateEndpoints: true, agent: new https.Agent({ ca: push.ca }), retryBaseMs: 5, tries: 3 } }),
});
after(async () => {
  await push?.close();
  await receiver?.close();
});

test('a prompt parked while the phone is offline: pushed, re-sent when the phone returns, allowed from the notification, the run finishes', async () => {
  const subscription = push.subscription();
  const pathId = subscription.endpoint.split('/').pop();
  const pushes = () => push.received.filter((p) => p.id === pathId).map((p) => p.payload!);

  const phone = await TestClient.authed(svc.wsUrl, svc.token);
  const device_id = randomUUID();
  const subscribed = await phone.request({ type: 'push_subscribe', device_id, device_name: 'Pixel', subscription });
  assert.equal(subscribed.status, 'ok', JSON.stringify(subscribed));
  phone.close();
  await phone.waitClose();

  svc.fake.script({ tool_calls: [{ name: 'run_command', arguments: { command: 'echo built > away.txt' } }] }, { text: 'the build note is written' });
  const accepted = await postJson(`${svc.httpUrl}/hooks/ci`, { message: 'write the build note' }, { 'x-service-secret': SECRET });
  assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
  const conversationId = (accepted.body!.data as { conversation_id: string }).conversation_id;

  // Nobody is connected: the request waits (it used to be denied at once) and the phone is notified.
  await push.waitFor(() => pushes().some((p) => p.kind === 'prompt'), 'the prompt push');
  const prompt = pushes().find((p) => p.kind === 'prompt')!;
  assert.equal(prompt.conversation_id, conversationId);
  assert.equal(prompt.title, 'Run echo built > away.txt?', 'what it asks in words (s26: was "Approve run_command?")');
  assert.equal(prompt.body, 'write the build note', 'the conversation, not the command the title says (s27: said twice)');
  assert.equal(existsSync(join(svc.workspace, 'away.txt')), false, 'nothing ran before the answer');

  // The phone comes back (the notification was tapped): the waiting request is sent as it authenticates.
  const back = await TestClient.authed(svc.wsUrl, svc.token);
  const resent = await back.next((f) => f.event === 'permission.request');
  assert.equal(resent.request_id, prompt.request_id, 'the request the notification named');
  assert.equal(resent.source, 'webhook:ci');
  assert.equal((resent.preview as { kind: string; command: string }).command, 'echo built > away.txt');

  const allowed = await back.request({ type: 'permission_response', request_id: String(prompt.request_id), decision: 'allow' });
  assert.equal(allowed.status, 'ok', JSON.stringify(allowed));

  await receiver.waitFor((r) => r.requests.some((c) => c.body?.conversation_id === conversationId), 'the webhook callback');
  const callback = receiver.requests.find((c) => c.body?.conversation_id === conversationId)!;
  assert.equal(callback.body?.message, 'the build note is written');
  assert.equal(existsSync(join(svc.workspace, 'away.txt')), true, 'the tool ran once allowed');

  await push.waitFor(() => pushes().some((p) => p.kind === 'webhook'), 'the run-finished push');
  const kinds = pushes().map((p) => p.kind);
  assert.deepEqual(kinds, ['prompt', 'resolved', 'webhook']);
  assert.equal(pushes()[1].tag, prompt.tag, "the withdrawal names the prompt's tag");
  back.close();
});
