// Issue 20: the agent's cache of recent rows (agent/history-cache.ts) is bounded in bytes as well as in
// rows and conversations: a message may be a megabyte, and 64 conversations of 500 such rows were kept.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HistoryCache } from '../../src/agent/history-cache';
import type { MessageRow } from '../../src/store';

const KB = 1024;

/** A messages repo in memory that counts full reads (`recent`): a forgotten conversation is read again. */
function repo() {
  const rows = new Map<string, MessageRow[]>();
  let seq = 0;
  const reads: string[] = [];
  return {
    reads,
    add(conversationId: string, kb: number): void {
      seq += 1;
      const row: MessageRow = {
        seq,
        id: `m${seq}`,
        conversation_id: conversationId,
        role: 'user',
        content: 'x'.repeat(kb * KB),
        timestamp: '',
        tool_name: null,
        user_id: null,
        data: null,
        client_key: null,
      };
      rows.set(conversationId, [...(rows.get(conversationId) ?? []), row]);
    },
    async recent(conversationId: string): Promise<MessageRow[]> {
      reads.push(conversationId);
      return [...(rows.get(conversationId) ?? [])];
    },
    async after(conversationId: string, after: number): Promise<MessageRow[]> {
      return (rows.get(conversationId) ?? []).filter((r) => r.seq > after);
    },
  };
}

test('past its bytes the least recently used conversations are forgotten (read again when needed); the rows are always whole', async () => {
  const messages = repo();
  const cache = new HistoryCache(messages, 500, 64, 100 * KB);
  for (const id of ['a', 'b', 'c']) for (let i = 0; i < 2; i += 1) messages.add(id, 20);
  for (const id of ['a', 'b', 'c']) assert.equal((await cache.rows(id)).length, 2);
  // 3 x 40 KB > 100 KB: 'a', the least recently used, went; 'b' and 'c' are served from the cache.
  messages.reads.length = 0;
  await cache.rows('c');
  await cache.rows('b');
  assert.deepEqual(messages.reads, []);
  assert.equal((await cache.rows('a')).length, 2);
  assert.deepEqual(messages.reads, ['a']);
  // New rows are added to a cached conversation, and count: 'c' grows past what fits beside the others.
  messages.add('c', 50);
  assert.equal((await cache.rows('c')).length, 3);
  messages.reads.length = 0;
  await cache.rows('a');
  await cache.rows('b');
  assert.deepEqual(messages.reads, ['a', 'b']);
});

test('a conversation bigger than the whole cache is served whole but not kept', async () => {
  const messages = repo();
  const cache = new HistoryCache(messages, 500, 64, 100 * KB);
  for (let i = 0; i < 3; i += 1) messages.add('big', 40);
  assert.equal((await cache.rows('big')).length, 3);
  assert.equal((await cache.rows('big')).length, 3);
  assert.deepEqual(messages.reads, ['big', 'big']);
});
