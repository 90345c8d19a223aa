// The chat webview's posts joined per turn of the extension host's loop (TickBatch in WebviewBridge): what the
// view is sent within one task goes as one post, its messages in the order sent (the stream pieces before
// what follows them, a response after the events before it), each scrubbed of the secrets the editor knows;
// one message alone goes as itself; dispose sends what waits. The bridge with the `vscode` double; a channel
// as the service thread's (its batches are taken in one task).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Envelope, HostToUi, ServiceEvent } from '../../src/protocol';
import { installVscodeDouble, unbatched } from '../helpers/vscode-double';

installVscodeDouble();

const secret = 'sk-live-batch-0123456789abcdef';
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

async function bridged(secrets: () => string[] = () => [secret]) {
  const { WebviewBridge } = await import('../../src/extension/webview-bridge');
  const posted: HostToUi[] = [];
  const own: string[] = [];
  const bridge = new WebviewBridge(
    (message) => posted.push(structuredClone(message)),
    () => undefined,
    secrets,
    (request) => own.push(request.request_id),
  );
  let sink: { onEvent(event: ServiceEvent): void; onResponse(envelope: Envelope): void } | undefined;
  const sent: unknown[] = [];
  const backend = { openViewChannel: (given: typeof sink) => ((sink = given), { send: (frame: unknown) => sent.push(frame), dispose: () => undefined }) };
  bridge.setBackend(backend as never, { state: 'hosting', port: 1 } as never);
  return { bridge, posted, own, sink: sink!, sent };
}

test('what the view is sent in one task is one post, in the order sent, across kinds; each message scrubbed', async () => {
  const { bridge, posted, sink } = await bridged();
  await nextTurn();
  posted.length = 0;
  bridge.receive({ kind: 'frame', frame: { type: 'chat', id: 'c1', message: 'hi', stream: true } });
  // A chat's end as the service thread's batch brings it: in one task.
  sink.onEvent({ event: 'chat.delta', id: 'c1', conversation_id: 'conv', seq: 1, delta: 'the key is ' });
  sink.onEvent({ event: 'chat.delta', id: 'c1', conversation_id: 'conv', seq: 2, delta: secret });
  sink.onEvent({ event: 'chat.message', conversation_id: 'conv', seq: 3, message: { id: 'm1', role: 'assistant', content: `said ${secret}` } } as never);
  sink.onEvent({ event: 'turn.ended', conversation_id: 'conv', source: 'editor', seq: 4, outcome: 'answered' });
  sink.onResponse({ status: 'ok', id: 'c1', data: { response: `the key is ${secret}` } } as Envelope);
  bridge.postEvent({ event: 'editor.new_conversation' });
  assert.equal(posted.length, 0, 'nothing posted within the task');
  await nextTurn();
  assert.equal(posted.length, 1, `one post: ${JSON.stringify(posted)}`);
  assert.equal(posted[0].kind, 'batch');
  const messages = unbatched(posted[0]) as HostToUi[];
  const kinds = messages.map((m) => (m.kind === 'event' ? m.event.event : m.kind));
  assert.deepEqual(kinds, ['chat.delta', 'chat.message', 'turn.ended', 'response', 'editor.new_conversation']);
  const text = JSON.stringify(messages);
  assert.ok(!text.includes(secret), `a secret reached the view: ${text}`);
  assert.equal((text.match(/\[redacted\]/g) ?? []).length, 3, 'the piece, the reply and the answer: each scrubbed');
  assert.equal((messages[0] as { event: { delta: string } }).event.delta, 'the key is [redacted]', 'the pieces joined, then scrubbed');
  bridge.dispose();
});

test('one message alone goes as itself; tasks apart go apart', async () => {
  const { bridge, posted, sink } = await bridged();
  await nextTurn();
  posted.length = 0;
  sink.onEvent({ event: 'config.changed', fields: ['model'] } as never);
  await nextTurn();
  sink.onResponse({ status: 'ok', id: 'x', data: {} } as Envelope);
  await nextTurn();
  assert.deepEqual(
    posted.map((m) => m.kind),
    ['event', 'response'],
  );
  bridge.dispose();
});

test('dispose sends what waits at once (a view still shown gets it), the pending stream piece dropped as before', async () => {
  const { bridge, posted, sink } = await bridged();
  await nextTurn();
  posted.length = 0;
  sink.onEvent({ event: 'turn.ended', conversation_id: 'conv', source: 'editor', seq: 1, outcome: 'answered' });
  sink.onResponse({ status: 'ok', id: 'c1', data: {} } as Envelope);
  sink.onEvent({ event: 'chat.delta', id: 'c2', conversation_id: 'conv', seq: 2, delta: 'half' });
  bridge.dispose();
  assert.equal(posted.length, 1);
  assert.deepEqual(
    unbatched(posted[0]).map((m) => (m as HostToUi).kind),
    ['event', 'response'],
  );
  await nextTurn();
  assert.equal(posted.length, 1, 'nothing after dispose');
});

test("a permission request of the view's chat is told to the editor at once; its post waits for nothing longer than the task", async () => {
  const { bridge, posted, own, sink } = await bridged();
  await nextTurn();
  posted.length = 0;
  bridge.receive({ kind: 'frame', frame: { type: 'chat', id: 'c1', message: 'hi', conversation_id: 'conv' } });
  sink.onEvent({ event: 'permission.request', request_id: 'r1', conversation_id: 'conv', tool: 'write_file', arguments: {} } as never);
  assert.deepEqual(own, ['r1'], 'the editor heard it in the same task');
  await nextTurn();
  assert.deepEqual(
    posted.map((m) => m.kind === 'event' && m.event.event),
    ['permission.request'],
  );
  bridge.dispose();
});

test('a message is scrubbed of the secrets known when it was sent, not only of those known when its batch goes', async () => {
  // The editor forgets a key (removed, replaced) in the same task as a message that carries it was sent.
  let known = [secret];
  const { bridge, posted, sink } = await bridged(() => known);
  await nextTurn();
  posted.length = 0;
  sink.onResponse({ status: 'ok', id: 'c1', data: { response: `the key was ${secret}` } } as Envelope);
  known = [];
  await nextTurn();
  const text = JSON.stringify(posted);
  assert.ok(!text.includes(secret), `a secret reached the view: ${text}`);
  bridge.dispose();
});
