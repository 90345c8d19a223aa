// Issue 25: a conversation's events go to its sender first, then to its followers in an order that
// starts one further each event (commands/conversation-feed.ts deliver: each follower's frame waits
// for the kernel writes of those before it, so no follower is always the last of a hundred). Whatever
// the order, each follower receives every event once, in order: when a follower leaves in the middle
// of a delivery, and when one joins with a replay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConversationFeeds, type FeedEvent } from '../../src/commands/conversation-feed';
import type { ClientSession } from '../../src/commands/session';
import type { ServiceEvent } from '../../src/protocol';

/** Which session received which event, in the order they were sent, across every session. */
type Delivery = [name: string, seq: number, id: unknown];

function client(name: string, log: Delivery[], onEvent?: (event: ServiceEvent) => void): ClientSession & { received: ServiceEvent[] } {
  const received: ServiceEvent[] = [];
  return {
    id: name,
    source: { kind: 'lan' },
    canAnswerPermissions: true,
    received,
    send: (event) => {
      received.push(event);
      log.push([name, (event as { seq: number }).seq, (event as { id?: unknown }).id]);
      onEvent?.(event);
    },
  };
}

const delta = (conversationId: string, text: string): FeedEvent => ({ event: 'chat.delta', conversation_id: conversationId, delta: text });
const seqs = (events: ServiceEvent[]) => events.map((e) => (e as { seq: number }).seq);
const texts = (events: ServiceEvent[]) => events.map((e) => (e as { delta: string }).delta).join('');

test('the sender first, then the followers starting one further each event: each is first equally often and gets every event once, in order', () => {
  const feeds = new ConversationFeeds();
  const log: Delivery[] = [];
  const sender = client('sender', log);
  const followers = ['a', 'b', 'c', 'd'].map((name) => client(name, log));
  feeds.follow(sender, 'c1', undefined, false);
  for (const follower of followers) feeds.follow(follower, 'c1');
  const origin = { sessionId: 'sender', requestId: 'r1' };
  const published = Array.from({ length: 8 }, (_, i) => feeds.publish(delta('c1', `p${i} `), { origin }).seq!);

  const firsts = new Map<string, number>();
  for (const seq of published) {
    const order = log.filter(([, s]) => s === seq).map(([name]) => name);
    assert.equal(order[0], 'sender', `the sender is written to first (${seq})`);
    assert.deepEqual([...order.slice(1)].sort(), ['a', 'b', 'c', 'd'], 'every follower once');
    firsts.set(order[1]!, (firsts.get(order[1]!) ?? 0) + 1);
  }
  assert.deepEqual([...firsts.entries()].sort(), [
    ['a', 2],
    ['b', 2],
    ['c', 2],
    ['d', 2],
  ]);
  // The sender's copies carry its request id, the followers' do not.
  assert.ok(log.every(([name, , id]) => (name === 'sender' ? id === 'r1' : id === undefined)));
  for (const session of [sender, ...followers]) {
    assert.deepEqual(seqs(session.received), published, `${session.id}: each event once, in order`);
    assert.equal(texts(session.received), 'p0 p1 p2 p3 p4 p5 p6 p7 ');
  }
});

test('a follower that leaves during a delivery hears nothing more; the others still get every event once, in order', () => {
  const feeds = new ConversationFeeds();
  const log: Delivery[] = [];
  let leaving: ClientSession | undefined;
  // `b` closes itself on the third event (its credential gone, as client-connection does) and makes
  // `c` leave with it, whether `c` was written to before `b` in that delivery or not.
  const followers: ClientSession[] = [];
  const c = client('c', log);
  const b = client('b', log, (event) => {
    if ((event as { delta: string }).delta !== 'p2 ') return;
    leaving = b;
    feeds.leave(b);
    feeds.leave(c);
  });
  followers.push(client('a', log), b, c, client('d', log));
  for (const follower of followers) feeds.follow(follower, 'c1');
  const published = Array.from({ length: 6 }, (_, i) => feeds.publish(delta('c1', `p${i} `)).seq!);

  assert.equal(leaving, b);
  for (const [name, follower] of [
    ['a', followers[0]!],
    ['d', followers[3]!],
  ] as const)
    assert.deepEqual(seqs((follower as unknown as { received: ServiceEvent[] }).received), published, `${name}: every event once, in order`);
  assert.deepEqual(seqs((b as unknown as { received: ServiceEvent[] }).received), published.slice(0, 3), 'b: up to the event it left on');
  const cGot = seqs((c as unknown as { received: ServiceEvent[] }).received);
  assert.ok(cGot.length === 2 || cGot.length === 3, `c: nothing after the delivery it left in (${cGot.length})`);
  assert.deepEqual(cGot, published.slice(0, cGot.length), 'c: what it got, in order, no gap');
});

test('a follower joining mid-turn with a replay gets each event once, in order, then the live ones in the rotation', () => {
  const feeds = new ConversationFeeds();
  const log: Delivery[] = [];
  const first = [client('a', log), client('b', log)];
  for (const follower of first) feeds.follow(follower, 'c1');
  const user: FeedEvent = { event: 'chat.message', conversation_id: 'c1', message: { id: 'm1', role: 'user', content: 'go', timestamp: new Date(0).toISOString() } };
  const published = [feeds.publish(user).seq!];
  for (let i = 0; i < 3; i += 1) published.push(feeds.publish(delta('c1', `p${i} `)).seq!);

  const late = client('late', log);
  const fromStart = client('replayed', log);
  // Without after_seq: the running turn so far; with it: what came after the number it names.
  feeds.follow(late, 'c1');
  feeds.follow(fromStart, 'c1', published[1]);
  for (let i = 3; i < 9; i += 1) published.push(feeds.publish(delta('c1', `p${i} `)).seq!);
  feeds.publish({ event: 'turn.ended', conversation_id: 'c1', source: 'ws', outcome: 'answered' });

  const all = [...published, published.at(-1)! + 1];
  for (const session of [...first, late]) assert.deepEqual(seqs(session.received), all, `${session.id}: the whole turn once, in order`);
  assert.deepEqual(seqs(fromStart.received), all.slice(2), 'replayed: from after the number it named, once, in order');
  // The live events after the join went to the four followers, each of them first in turn.
  const firsts = new Set(published.slice(4).map((seq) => log.find(([, s]) => s === seq)![0]));
  assert.deepEqual([...firsts].sort(), ['a', 'b', 'late', 'replayed']);
});
