import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConversationActivity } from '../../src/agent/conversation-activity';

// A turn's user message is stored but not yet durable: the conversation's row (its last message) goes
// to nobody until it is (ConversationActivity.hold). Two turns of one conversation can hold at once (a
// cancelled turn still waiting for its sync, the next turn's message stored behind it): the first to
// end must not announce the row, which already carries the second's text, while the second still holds.

test('a release while another turn still holds the conversation announces nothing and leaves the announcement to the last release', () => {
  const announced: string[] = [];
  const activity = new ConversationActivity((id) => announced.push(id));
  const first = activity.hold('c1');
  const second = activity.hold('c1');
  // The first turn's message is durable; its caller announces the row itself only when told it may.
  assert.equal(first(false), false, 'another hold is open: the caller must not announce the row');
  assert.deepEqual(announced, []);
  assert.equal(second(true), true);
  assert.deepEqual(announced, ['c1'], 'the announcement the first one left is made by the last release');
});

test('the only hold released by a caller that announces itself: it may, and nothing is announced twice', () => {
  const announced: string[] = [];
  const activity = new ConversationActivity((id) => announced.push(id));
  const only = activity.hold('c1');
  assert.equal(only(false), true);
  assert.deepEqual(announced, []);
});

// A turn's stored reply is told at the turn's end, in the one announcement that end makes (s33, updates33).
test("a reply is announced once, at its turn's end, with the turn's source and whether the state changed", () => {
  const announced: unknown[] = [];
  const activity = new ConversationActivity((id, reply) => announced.push([id, reply]));
  activity.turnQueued('c1');
  activity.replied('c1', 'ws');
  assert.deepEqual(announced, [], 'not when stored');
  activity.turnEnded('c1');
  assert.deepEqual(announced, [['c1', { source: 'ws', stateChanged: true }]], 'one announcement: the reply, and idle');

  // A message waiting behind the turn: its end still tells of the reply (the state stays running).
  announced.length = 0;
  activity.turnQueued('c1');
  activity.turnQueued('c1');
  activity.replied('c1', 'relay');
  activity.turnEnded('c1');
  assert.deepEqual(announced, [['c1', { source: 'relay', stateChanged: false }]]);
  // The next turn ends without a reply (cancelled): a plain change of state.
  activity.turnEnded('c1');
  assert.deepEqual(announced.at(-1), ['c1', undefined]);
  assert.equal(announced.length, 2);
});
