// A second retry_turn under the request id of a running one (refused: a turn runs) leaves the first one's
// `cancel {id}`: before the fix the refused request's end took it away (found by review25b, s25; this
// test failed then).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useService } from '../helpers/service-fixture';

const svc = useService({ config: async () => ({ model: 'fake-model' }) });

test('cancel {id} still stops a running retry after a refused retry under the same id', async () => {
  const owner = await svc.client();
  svc.fake.script({ status: 401 });
  const failed = await owner.request({ type: 'chat', message: 'Fails first' });
  assert.equal(failed.status, 'error');
  const ended = await owner.next((f) => f.event === 'turn.ended' && f.outcome === 'failed');
  const conversationId = String(ended.conversation_id);
  const messageId = String(ended.message_id);
  svc.fake.script({ text: 'a b c d e f g h i j', chunks: 10, chunkDelayMs: 300 });
  owner.send({ type: 'retry_turn', id: 'x', conversation_id: conversationId, message_id: messageId, stream: true });
  await owner.next((f) => f.event === 'chat.delta' && f.id === 'x');
  const again = await owner.request({ type: 'retry_turn', id: 'x', conversation_id: conversationId, message_id: messageId });
  assert.equal(again.code, 'conflict');
  const cancel = await owner.request({ type: 'cancel', id: 'x' });
  assert.deepEqual(cancel.data, { cancelled: true }, 'the running retry x is still cancellable by its id');
  owner.close();
});
