// The webview's PostMessageConnection over the shared protocol client (src/protocol/client.ts): frames
// posted with an id, the envelope answering that id resolves the request, events reach listeners, and a
// stopped service fails what waits. The host side is a recording of postMessage (the real one is the
// extension's bridge, covered by the e2e suite).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PostMessageConnection, type VsCodeApi } from '../../src/web/postmessage-connection';

function webview() {
  const posted: Record<string, unknown>[] = [];
  let deliver: (data: unknown) => void = () => undefined;
  const api: VsCodeApi = { postMessage: (m) => posted.push(m as Record<string, unknown>), getState: () => undefined, setState: () => undefined };
  const target = { addEventListener: (_type: string, listener: (event: Event) => void) => (deliver = (data) => listener({ data } as MessageEvent)) };
  const connection = new PostMessageConnection(api, target as unknown as Pick<Window, 'addEventListener'>);
  return { connection, posted, deliver: (data: unknown) => deliver(data) };
}

test('a request is posted with an id and resolved by the envelope with that id; events reach listeners', async () => {
  const { connection, posted, deliver } = webview();
  assert.deepEqual(posted.shift(), { kind: 'ready' });
  const events: unknown[] = [];
  connection.onEvent((event) => events.push(event));
  const answer = connection.request({ type: 'list_tools' });
  const sent = posted.shift() as { kind: string; frame: { type: string; id: string } };
  assert.equal(sent.kind, 'frame');
  assert.equal(sent.frame.type, 'list_tools');
  assert.match(sent.frame.id, /^ui-/);
  deliver({ kind: 'response', envelope: { status: 'ok', data: { tools: [] }, id: 'someone-else' } });
  deliver({ kind: 'event', event: { event: 'config.changed', fields: ['model'] } });
  deliver({ kind: 'response', envelope: { status: 'ok', data: { tools: [] }, id: sent.frame.id } });
  assert.deepEqual(await answer, { status: 'ok', data: { tools: [] }, id: sent.frame.id });
  assert.deepEqual(events, [{ event: 'config.changed', fields: ['model'] }]);
});

test('the service stopping fails the requests still waiting, and the connection stays usable', async () => {
  const { connection, posted, deliver } = webview();
  const waiting = connection.request({ type: 'get_config' });
  deliver({ kind: 'state', state: 'stopped' });
  await assert.rejects(waiting, /the service is stopped/);
  assert.equal(connection.state.state, 'closed');
  deliver({ kind: 'state', state: 'running' });
  const again = connection.request({ type: 'cancel', id: 'chat-1' });
  const sent = posted.at(-1) as { frame: { id: string } };
  assert.equal(sent.frame.id, 'chat-1');
  deliver({ kind: 'response', envelope: { status: 'ok', data: { cancelled: false }, id: 'chat-1' } });
  assert.deepEqual(await again, { status: 'ok', data: { cancelled: false }, id: 'chat-1' });
});

test("a batch of the extension's posts is taken in its order: the events before the response that follows them", async () => {
  const { connection, posted, deliver } = webview();
  const heard: string[] = [];
  connection.onEvent((event) => heard.push(event.event));
  const answer = connection.request({ type: 'list_tools' });
  const sent = posted.at(-1) as { frame: { id: string } };
  void answer.then(() => heard.push('response'));
  deliver({
    kind: 'batch',
    messages: [
      { kind: 'event', event: { event: 'config.changed', fields: ['model'] } },
      { kind: 'event', event: { event: 'turn.ended', conversation_id: 'c', source: 'editor', outcome: 'answered' } },
      { kind: 'response', envelope: { status: 'ok', data: { tools: [] }, id: sent.frame.id } },
      { kind: 'state', state: 'running' },
    ],
  });
  assert.deepEqual(heard, ['config.changed', 'turn.ended'], 'the events at once, in order');
  await answer;
  assert.deepEqual(heard, ['config.changed', 'turn.ended', 'response']);
  assert.equal(connection.state.state, 'open', 'the state inside the batch applied');
  // Not a batch's shape: ignored, as any unknown message.
  deliver({ kind: 'batch', messages: 'no' });
});
