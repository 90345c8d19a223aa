// A known secret split across two chat.delta pieces that reach the extension host together (its loop was
// busy) never reaches the chat view, whole or in halves (review28b): the service's thread joins pieces by
// when they were sent, so two halves sent apart cross its port as two; the view's bridge joins again as
// they arrive and scrubs the joined text. The bridge with the `vscode` double; a channel as the thread's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { installVscodeDouble, unbatched } from '../helpers/vscode-double';

installVscodeDouble();

test('a known secret split across two pieces arriving together never reaches the webview, whole or in halves', async () => {
  const { WebviewBridge } = await import('../../src/extension/webview-bridge');
  const secret = 'sk-live-0123456789abcdef';
  const posted: unknown[] = [];
  const bridge = new WebviewBridge(
    (message) => posted.push(message),
    () => undefined,
    () => [secret],
  );
  let sink: { onEvent(event: unknown): void } | undefined;
  const backend = {
    openViewChannel: (given: typeof sink) => ((sink = given), { send: () => undefined, dispose: () => undefined }),
  };
  bridge.setBackend(backend as never, { state: 'hosting' } as never);
  sink!.onEvent({ event: 'chat.delta', id: 1, conversation_id: 'c', seq: 1, delta: `key: ${secret.slice(0, 12)}` });
  sink!.onEvent({ event: 'chat.delta', id: 1, conversation_id: 'c', seq: 2, delta: `${secret.slice(12)} end` });
  sink!.onEvent({ event: 'turn.ended', conversation_id: 'c', outcome: 'answered' });
  bridge.dispose();
  const deltas = posted
    .flatMap(unbatched)
    .map((m) => (m as { event?: { event?: string; delta?: string } }).event)
    .filter((e) => e?.event === 'chat.delta');
  const text = deltas.map((e) => e!.delta).join('|');
  assert.ok(!text.includes(secret.slice(0, 12)) && !text.includes(secret.slice(12)), `the webview got: ${text}`);
  assert.match(text, /^key: .+ end$/, 'the rest of the text is shown, in one piece');
});
