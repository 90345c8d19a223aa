// A retry's client_retry_id is stored with the message it retried (store/retry-keys.ts), in the journal's
// file before the model is asked and durable with the turn's own commit: a retried 0-tool turn costs one
// fdatasync, as a chat's does (docs/design.md "One durable commit for a 0-tool turn"). Only the newest
// RETRY_KEYS_KEPT are kept, and a deleted conversation's go with it. In process, a real data directory.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CompletionRequest, CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { RETRY_KEYS_KEPT } from '../../src/store';
import { datasyncGate } from '../helpers/datasync-gate';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 120_000 };
const source = { kind: 'lan' } as const;

test('a retried 0-tool turn stores its key with the message and costs one fdatasync, as a chat does', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('ra-retry-durable-');
  t.after(cleanup);
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  let failing = true;
  let asked = 0;
  const provider: Provider = {
    name: 'instant',
    async complete(_request: CompletionRequest): Promise<CompletionResult> {
      asked += 1;
      if (failing) throw new Error('down');
      return { text: 'done', tool_calls: [], finish_reason: 'stop' };
    },
  };
  const service = await Service.open({ dataDir: dir, provider: () => provider });
  t.after(() => service.stop());
  const { agent, store } = service;
  await assert.rejects(agent.chat({ message: 'first', source }));
  const [conversation] = store.conversations.list({ limit: 1 });
  const [message] = await store.messages.recent(conversation.id, { limit: 1 });
  assert.equal(message.content, 'first');
  await store.db.flush();

  failing = false;
  const syncs = await datasyncGate(t);
  const counted = async () => syncs.count() + (await store.history.stats()).syncs;
  const before = await counted();
  const retry = { conversationId: conversation.id, messageId: message.id, retryKey: 'owner\u0000tap-1', source, ownerAnswersPrompts: () => false };
  assert.equal((await agent.retry(retry)).response, 'done');
  assert.equal((await counted()) - before, 1, 'the key rides on the reply\u2019s commit: no sync of its own');
  assert.deepEqual(store.retryKeys.get('owner\u0000tap-1'), { conversation_id: conversation.id, message_id: message.id });
  assert.equal(asked, 2);

  // A deleted conversation's keys go with it.
  assert.ok(await store.conversations.delete(conversation.id));
  assert.equal(store.retryKeys.get('owner\u0000tap-1'), undefined);
});

test('only the newest RETRY_KEYS_KEPT retry keys are kept', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('ra-retry-keys-bound-');
  t.after(cleanup);
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => ({ name: 'none', complete: () => Promise.reject(new Error('unused')) }) });
  t.after(() => service.stop());
  const { retryKeys, db } = service.store;
  for (let i = 0; i <= RETRY_KEYS_KEPT; i++) void retryKeys.remember(`p\u0000${i}`, { conversation_id: 'c', message_id: `m${i}` }, { deferSync: true });
  await db.flush();
  assert.equal(retryKeys.get('p\u00000'), undefined, 'the oldest went');
  assert.deepEqual(retryKeys.get('p\u00001'), { conversation_id: 'c', message_id: 'm1' });
  assert.deepEqual(retryKeys.get(`p\u0000${RETRY_KEYS_KEPT}`), { conversation_id: 'c', message_id: `m${RETRY_KEYS_KEPT}` });
  assert.equal(db.get<{ n: number }>('SELECT count(*) AS n FROM retry_keys')?.n, RETRY_KEYS_KEPT);
});

test("one person's retries never push out another's keys (review27b: the bound was shared, so a password user's 1,000 retries made the owner's resend after a restart run again)", LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('ra-retry-keys-people-');
  t.after(cleanup);
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => ({ name: 'none', complete: () => Promise.reject(new Error('unused')) }) });
  t.after(() => service.stop());
  const { retryKeys, db } = service.store;
  void retryKeys.remember('owner\u0000mine', { conversation_id: 'c', message_id: 'm-owner' }, { deferSync: true });
  for (let i = 0; i <= RETRY_KEYS_KEPT; i++) void retryKeys.remember(`user:mallory\u0000${i}`, { conversation_id: 'c', message_id: `m${i}` }, { deferSync: true });
  await db.flush();
  assert.deepEqual(retryKeys.get('owner\u0000mine'), { conversation_id: 'c', message_id: 'm-owner' }, "the owner's key is kept");
  assert.equal(retryKeys.get('user:mallory\u00000'), undefined, "the other person's oldest went");
  assert.equal(db.get<{ n: number }>('SELECT count(*) AS n FROM retry_keys')?.n, RETRY_KEYS_KEPT + 1);
});
