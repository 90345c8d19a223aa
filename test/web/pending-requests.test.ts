// The clients' one tracker of waiting permission requests (protocol/pending-requests.ts): the phone's
// machine status and prompt cards, the webview's cards and the editor all follow it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PermissionRequest } from '../../src/protocol';
import { PendingRequests, type PendingChange } from '../../src/protocol/pending-requests';

const request = (id: string): PermissionRequest => ({
  request_id: id,
  conversation_id: 'c1',
  conversation_title: 'A chat',
  source: 'ws',
  tool: 'write_file',
  arguments: { path: `${id}.txt` },
  created_at: '2026-11-26T08:00:00.000Z',
  expires_at: '2026-11-26T08:30:00.000Z',
});
const asked = (id: string) => ({ event: 'permission.request', seq: 7, ...request(id) });
const resolved = (id: string) => ({ event: 'permission.resolved', seq: 8, request_id: id, conversation_id: 'c1', decision: 'deny', reason: 'expired' });

function tracked(): { pending: PendingRequests; changes: string[] } {
  const pending = new PendingRequests();
  const changes: string[] = [];
  pending.onChange((change: PendingChange) =>
    changes.push(change.kind === 'listed' ? 'listed' : `${change.kind} ${'request' in change && change.request ? change.request.request_id : (change as { requestId: string }).requestId}`),
  );
  return { pending, changes };
}

test('events add and resolve requests; the copy kept is the request without event and seq; a late copy of a resolved one never comes back', () => {
  const { pending, changes } = tracked();
  pending.hear(asked('r1'));
  pending.hear(asked('r1'));
  pending.hear({ event: 'chat.delta' });
  assert.deepEqual(pending.get('r1'), request('r1'));
  pending.hear(resolved('r1'));
  pending.hear(asked('r1'));
  assert.equal(pending.size, 0);
  assert.equal(pending.wasResolved('r1'), true);
  pending.hear(resolved('r9'));
  assert.deepEqual(changes, ['added r1', 'resolved r1', 'resolved r9']);
});

test('a re-list: known before and not listed is gone; asked while the list was on its way is kept; resolved meanwhile stays resolved', async () => {
  const { pending, changes } = tracked();
  pending.hear(asked('old'));
  pending.hear(asked('kept'));
  await pending.refresh(async () => {
    pending.hear(asked('new'));
    pending.hear(resolved('listed-but-resolved'));
    return [request('kept'), request('listed'), request('listed-but-resolved')];
  });
  assert.deepEqual(
    pending.values().map((r) => r.request_id),
    ['kept', 'new', 'listed'],
  );
  assert.deepEqual(changes, ['added old', 'added kept', 'added new', 'resolved listed-but-resolved', 'added listed', 'gone old', 'listed']);
});

test('a list that could not be had keeps what is known (dropped) or drops it (the service cannot list)', async () => {
  const { pending } = tracked();
  pending.hear(asked('r1'));
  await pending.refresh(async () => undefined);
  assert.deepEqual(
    pending.values().map((r) => r.request_id),
    ['r1'],
    'dropped before the answer: the next authentication lists again',
  );
  await pending.refresh(async () => null);
  assert.equal(pending.size, 0, 'an older service: its requests did not survive the drop');
  pending.hear(asked('r2'));
  pending.clear();
  assert.equal(pending.size, 0);
});
