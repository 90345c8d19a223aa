// Issue 20, "Must fix" 1: the events kept for catching up (commands/conversation-feed.ts) are bounded in
// bytes, per conversation, per running turn and in all. What is dropped answers `reset`, never a replay
// with a hole; what is held replays exactly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConversationFeeds, FEED_LIMITS, type FeedEvent, type FeedLimits } from '../../src/commands/conversation-feed';
import type { ClientSession } from '../../src/commands/session';
import type { ServiceEvent } from '../../src/protocol';

const KB = 1024;
/** Small limits, so a few events of some kilobytes pass them. */
const LIMITS: FeedLimits = { ...FEED_LIMITS, conversationBytes: 40 * KB, turnBytes: 60 * KB, totalBytes: 100 * KB };

function client(): ClientSession & { received: ServiceEvent[] } {
  const received: ServiceEvent[] = [];
  return { id: `s${Math.random()}`, source: { kind: 'lan' }, canAnswerPermissions: true, received, send: (event) => void received.push(event) };
}

let messageNo = 0;
/** A chat.message of about `kb` kilobytes as sent. */
function message(conversationId: string, kb: number, role: 'user' | 'assistant' = 'assistant'): FeedEvent {
  messageNo += 1;
  return { event: 'chat.message', conversation_id: conversationId, message: { id: `m${messageNo}`, role, content: 'x'.repeat(kb * KB), timestamp: new Date(0).toISOString() } };
}

const ended = (conversationId: string): FeedEvent => ({ event: 'turn.ended', conversation_id: conversationId, source: 'ws', outcome: 'answered' });

/** A whole turn: its user message, a reply of `kb`, its end. Returns the seq of its last event. */
function turn(feeds: ConversationFeeds, conversationId: string, kb: number): number {
  feeds.publish(message(conversationId, 1, 'user'));
  feeds.publish(message(conversationId, kb));
  return feeds.publish(ended(conversationId)).seq!;
}

const seqs = (events: ServiceEvent[]) => events.map((e) => (e as { seq?: number }).seq);

test('each event is counted once, by its size as sent; forgetting a conversation gives its bytes back', () => {
  const feeds = new ConversationFeeds(LIMITS);
  const event = message('a', 5);
  const sent = feeds.publish(event);
  assert.equal(feeds.heldBytes, JSON.stringify(sent).length);
  feeds.publish(message('b', 3));
  feeds.forget('a');
  assert.ok(feeds.heldBytes > 3 * KB && feeds.heldBytes < 4 * KB, String(feeds.heldBytes));
  feeds.forget('b');
  assert.equal(feeds.heldBytes, 0);
});

test('a conversation past its bytes drops its oldest turns: a follower behind them gets reset, one within them the exact rest', () => {
  const feeds = new ConversationFeeds(LIMITS);
  const firstEnd = turn(feeds, 'a', 10);
  const ends = [firstEnd];
  for (let i = 0; i < 5; i += 1) ends.push(turn(feeds, 'a', 10));
  // Six turns of 12 KB: at most 40 KB is held, the oldest gone.
  assert.ok(feeds.heldBytes <= LIMITS.conversationBytes, String(feeds.heldBytes));

  const behind = client();
  const old = feeds.follow(behind, 'a', firstEnd);
  assert.equal(old.reset, true);
  assert.deepEqual(behind.received, [], 'no turn runs: nothing to replay after a reset');

  const recent = client();
  const caughtUp = feeds.follow(recent, 'a', ends[4]);
  assert.equal(caughtUp.reset, false);
  assert.deepEqual(seqs(recent.received), [ends[4]! + 1, ends[4]! + 2, ends[4]! + 3], 'the last turn, whole and in order');
  assert.equal(caughtUp.seq, ends[5]);
});

test('the running turn is kept whole up to its own limit, past the conversation\u2019s: a fresh follower gets all of it', () => {
  const feeds = new ConversationFeeds(LIMITS);
  const endedAt = turn(feeds, 'a', 30);
  const start = feeds.publish(message('a', 1, 'user')).seq!;
  for (let i = 0; i < 5; i += 1) feeds.publish({ event: 'chat.delta', conversation_id: 'a', delta: 'y'.repeat(10 * KB) });
  // 51 KB of running turn: over the conversation's 40 KB, within the turn's 60 KB; the ended turn's 31 KB
  // are within the conversation's own.
  const fresh = client();
  feeds.follow(fresh, 'a');
  assert.deepEqual(seqs(fresh.received), [start, start + 1, start + 2, start + 3, start + 4, start + 5]);
  assert.equal(feeds.follow(client(), 'a', endedAt - 3).reset, false);
  assert.ok(feeds.heldBytes <= LIMITS.conversationBytes + LIMITS.turnBytes, String(feeds.heldBytes));
  // Once the turn ends, all of it is an ended turn: the conversation's limit applies to the lot.
  feeds.publish(ended('a'));
  assert.ok(feeds.heldBytes <= LIMITS.conversationBytes, String(feeds.heldBytes));
  assert.equal(feeds.follow(client(), 'a', endedAt - 3).reset, true);
});

test('a running turn past its own limit loses its oldest events: a follower from before them gets reset and the rest of the turn, in order', () => {
  const feeds = new ConversationFeeds(LIMITS);
  const start = feeds.publish(message('a', 1, 'user')).seq!;
  let last = start;
  for (let i = 0; i < 10; i += 1) last = feeds.publish({ event: 'chat.delta', conversation_id: 'a', delta: 'y'.repeat(10 * KB) }).seq!;
  assert.ok(feeds.heldBytes <= LIMITS.turnBytes, String(feeds.heldBytes));
  const follower = client();
  const { reset } = feeds.follow(follower, 'a', start);
  assert.equal(reset, true);
  const got = seqs(follower.received) as number[];
  assert.ok(got.length > 0 && got.length < 10, `held ${got.length} of the turn's 11 events`);
  // No hole inside what is replayed, and it reaches the last event.
  assert.deepEqual(
    got,
    got.map((_, i) => got[0]! + i),
  );
  assert.equal(got[got.length - 1], last);
});

test('all conversations together stay within the total: the least recently active lose their ended turns first', () => {
  const feeds = new ConversationFeeds(LIMITS);
  const endOf = new Map<string, number>();
  for (let c = 0; c < 12; c += 1) endOf.set(`c${c}`, turn(feeds, `c${c}`, 20));
  assert.ok(feeds.heldBytes <= LIMITS.totalBytes, String(feeds.heldBytes));
  // The oldest conversation's turn is gone (reset), the newest's is held (exact replay of nothing after its end).
  const late = client();
  assert.equal(feeds.follow(late, 'c0', endOf.get('c0')! - 3).reset, true);
  const recent = client();
  const newest = feeds.follow(recent, 'c11', endOf.get('c11')! - 3);
  assert.equal(newest.reset, false);
  assert.deepEqual(seqs(recent.received), [endOf.get('c11')! - 2, endOf.get('c11')! - 1, endOf.get('c11')]);
  // A follower that had seen everything of a dropped conversation is not reset: nothing after its number was lost.
  const current = client();
  assert.equal(feeds.follow(current, 'c0', endOf.get('c0')!).reset, false);
});

test('running turns over the total lose their oldest events too, the least recently active first; the live stream goes on', async () => {
  const feeds = new ConversationFeeds(LIMITS);
  const followers = new Map<string, ReturnType<typeof client>>();
  for (let c = 0; c < 4; c += 1) {
    const follower = client();
    feeds.follow(follower, `r${c}`);
    followers.set(`r${c}`, follower);
    feeds.publish(message(`r${c}`, 1, 'user'));
    for (let i = 0; i < 4; i += 1) feeds.publish({ event: 'chat.delta', conversation_id: `r${c}`, delta: 'y'.repeat(10 * KB) });
  }
  assert.ok(feeds.heldBytes <= LIMITS.totalBytes, String(feeds.heldBytes));
  // Followers are sent the events once this turn of the event loop is done (conversation-feed.ts deliver).
  await new Promise((resolve) => setImmediate(resolve));
  // Every live follower received every event of its conversation, whatever was dropped from the feed.
  for (const follower of followers.values()) assert.equal(follower.received.length, 5);
  const fresh = client();
  feeds.follow(fresh, 'r0');
  assert.ok(fresh.received.length < 5, 'the least recently active running turn was cut');
});
