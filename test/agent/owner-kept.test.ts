// A chat's check of its conversation (exists, its sender may see it) reads the owner from memory while
// nothing that could change it was written (ConversationsRepo.sourceOf, Database.memo; s19 turn19a). No
// owner kept there may outlive a delete: a conversation deleted by another client refuses the next chat,
// and an id deleted and made again by another source refuses its first owner's chats.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Provider } from '../../src/agent/providers/types';
import { ServiceError } from '../../src/protocol';
import { Service } from '../../src/service';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };
const notFound = (error: unknown) => error instanceof ServiceError && error.code === 'not_found';

async function opened(t: { after: (fn: () => Promise<void>) => void }): Promise<Service> {
  const { dir, cleanup } = await tempDir('owner-kept-');
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const model: Provider = { name: 'quick', complete: async () => ({ text: 'done', tool_calls: [], finish_reason: 'stop' }) };
  const service = await Service.open({ dataDir: dir, provider: () => model });
  t.after(async () => {
    await service.stop();
    await cleanup();
  });
  return service;
}

test('a conversation deleted by one client refuses the next chat of another that sent to it before (not_found), and stores nothing', LIMIT, async (t) => {
  const service = await opened(t);
  const phone = { kind: 'relay' } as const;
  const { conversation_id: conversationId } = await service.agent.chat({ message: 'first', source: phone });
  assert.equal((await service.agent.chat({ message: 'second', conversationId, source: phone })).response, 'done');
  // The LAN client deletes it.
  assert.equal(await service.store.conversations.delete(conversationId), true);
  await assert.rejects(service.agent.chat({ message: 'third', conversationId, source: phone }), notFound);
  assert.equal(service.store.conversations.get(conversationId), undefined);
  assert.deepEqual(await service.store.messages.recent(conversationId, { limit: 10 }), []);
});

test("an id deleted and made again by another source refuses its first owner's chats, and the new owner's go on", LIMIT, async (t) => {
  const service = await opened(t);
  const crm = { kind: 'webhook', account: 'crm' } as const;
  const other = { kind: 'webhook', account: 'other' } as const;
  const { conversation_id: conversationId } = await service.agent.chat({ message: 'from the crm', source: crm, worktree: false });
  assert.equal((await service.agent.chat({ message: 'again', conversationId, source: crm })).response, 'done');
  assert.equal(await service.store.conversations.delete(conversationId), true);
  await service.store.conversations.create({ id: conversationId, title: 'theirs', source: 'webhook:other', created_at: new Date().toISOString() });
  await assert.rejects(service.agent.chat({ message: 'into theirs', conversationId, source: crm }), notFound);
  assert.deepEqual(await service.store.messages.recent(conversationId, { limit: 10 }), []);
  assert.equal((await service.agent.chat({ message: 'mine', conversationId, source: other })).response, 'done');
  const stored = await service.store.messages.recent(conversationId, { limit: 10 });
  assert.deepEqual(
    stored.map((m) => m.content),
    ['mine', 'done'],
  );
  // And back: the crm's refused, the other's still fine.
  await assert.rejects(service.agent.chat({ message: 'into theirs, again', conversationId, source: crm }), notFound);
});
