// Which running tool card a permission request marks "waiting for you" (waiting-tools.ts): by the request's
// `call_id` when it has one (two identical calls are told apart), by tool and arguments from an older
// service. Cards here are the fields markWaitingTools reads; the page's own cards are tested in
// phone-day-use.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PermissionRequest } from '../../src/protocol';
import type { ToolCard } from '../../src/web/chat/tool-card';
import { markWaitingTools } from '../../src/web/chat/waiting-tools';

function card(callId: string | undefined, tool: string, args: unknown) {
  const state = { waiting: false };
  const shape = { callId, tool, argumentsGiven: args, running: true, setWaiting: (on: boolean) => (state.waiting = on) };
  return { card: shape as unknown as ToolCard, state };
}

function request(fields: Partial<PermissionRequest>): PermissionRequest {
  return {
    request_id: 'r',
    conversation_id: 'c1',
    conversation_title: '',
    source: 'ws',
    tool: 'list_directory',
    arguments: { path: '.' },
    created_at: '2026-11-28T00:00:00.000Z',
    expires_at: '2026-11-28T00:05:00.000Z',
    ...fields,
  };
}

test('two identical calls: the request marks the card of its call_id, not the first of the two', () => {
  const first = card('call-1', 'list_directory', { path: '.' });
  const second = card('call-2', 'list_directory', { path: '.' });
  markWaitingTools([first.card, second.card], [request({ call_id: 'call-2' })], 'c1');
  assert.deepEqual([first.state.waiting, second.state.waiting], [false, true]);
});

test('a call_id no card on screen has marks nothing (not a card of the same tool instead)', () => {
  const only = card('call-1', 'list_directory', { path: '.' });
  markWaitingTools([only.card], [request({ call_id: 'call-9' })], 'c1');
  assert.equal(only.state.waiting, false);
});

test('from an older service (no call_id): the card with the same tool and arguments, else the first of the tool', () => {
  const a = card('call-1', 'read_file', { path: 'a.ts' });
  const b = card('call-2', 'read_file', { path: 'b.ts' });
  markWaitingTools([a.card, b.card], [request({ tool: 'read_file', arguments: { path: 'b.ts' } })], 'c1');
  assert.deepEqual([a.state.waiting, b.state.waiting], [false, true]);
  markWaitingTools([a.card, b.card], [request({ tool: 'read_file', arguments: { path: 'c.ts' } })], 'c1');
  assert.deepEqual([a.state.waiting, b.state.waiting], [true, false]);
});

test("another conversation's request marks nothing here", () => {
  const only = card('call-1', 'list_directory', { path: '.' });
  markWaitingTools([only.card], [request({ call_id: 'call-1', conversation_id: 'c2' })], 'c1');
  assert.equal(only.state.waiting, false);
});
