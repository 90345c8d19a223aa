// A continued conversation is checked (exists, the sender may see it) when the chat arrives and again
// when its turn comes; both read its owner from memory unless a write since may have changed it
// (ConversationsRepo.sourceOf, s19). A conversation deleted while a chat waits in line behind a running
// turn must still refuse that chat (s13, cpu13).
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CompletionResult, Provider } from '../../src/agent/providers/types';
import { ServiceError } from '../../src/protocol';
import { Service } from '../../src/service';
import { tempDir } from '../helpers/temp';

/** A service whose model holds its first call until `release` (after `held`), then answers `done`. */
async function heldService(t: { after: (fn: () => Promise<void>) => void }): Promise<{ service: Service; held: Promise<void>; release: () => void }> {
  const { dir, cleanup } = await tempDir('turn-checks-');
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  let release: (() => void) | undefined;
  let asked!: () => void;
  const held = new Promise<void>((resolve) => (asked = resolve));
  const model: Provider = {
    name: 'held',
    async complete(): Promise<CompletionResult> {
      if (release === undefined) {
        await new Promise<void>((resolve) => {
          release = resolve;
          asked();
        });
      }
      return { text: 'done', tool_calls: [], finish_reason: 'stop' };
    },
  };
  const service = await Service.open({ dataDir: dir, provider: () => model });
  t.after(async () => {
    release?.();
    await service.stop();
    await cleanup();
  });
  return { service, held, release: () => release?.() };
}

test('a conversation deleted while a chat waits in line refuses it (not_found); with nothing written between, the chat runs', { timeout: 60_000 }, async (t) => {
  const { service, held, release } = await heldService(t);
  const source = { kind: 'lan' } as const;
  const first = service.agent.chat({ message: 'first', source });
  await held;
  const conversationId = service.store.conversations.list({ limit: 1 })[0]!.id;
  const queued = service.agent.chat({ message: 'second', conversationId, source });
  assert.equal(await service.store.conversations.delete(conversationId), true);
  release();
  await first.catch(() => undefined);
  await assert.rejects(queued, (error: unknown) => error instanceof ServiceError && error.code === 'not_found');
  assert.equal(service.store.conversations.get(conversationId), undefined);

  // Nothing written between the two checks: the turn runs as before.
  const other = await service.agent.chat({ message: 'third', source });
  const next = await service.agent.chat({ message: 'fourth', conversationId: other.conversation_id, source });
  assert.equal(next.response, 'done');
});

test(
  "a conversation deleted and made again by another account while a chat waits in line refuses it at its turn (the owner kept at the first check is not the second's; review19a)",
  { timeout: 60_000 },
  async (t) => {
    const { service, held, release } = await heldService(t);
    const crm = { kind: 'webhook', account: 'crm' } as const;
    const first = service.agent.chat({ message: 'first', source: crm, worktree: false });
    await held;
    const conversationId = service.store.conversations.list({ limit: 1 })[0]!.id;
    const queued = service.agent.chat({ message: 'second', conversationId, source: crm });
    // The owner is in memory (the first check passed). Deleted and made again as another account's, in one write.
    await service.store.db.write((tx) => {
      tx.run('DELETE FROM conversations WHERE id = ?', [conversationId]);
      tx.run('INSERT INTO conversations (id, title, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [conversationId, 'theirs', 'webhook:other', 'a', 'a']);
    });
    release();
    await first.catch(() => undefined);
    await assert.rejects(queued, (error: unknown) => error instanceof ServiceError && error.code === 'not_found');
    assert.ok(!(await service.store.messages.recent(conversationId, { limit: 10 })).some((m) => m.content === 'second'));
    assert.equal(service.store.conversations.sourceOf(conversationId), 'webhook:other');
  },
);

/** A service whose model answers `done` at once, stopped (and its directory removed) after the test. */
async function quickService(t: { after: (fn: () => Promise<void>) => void }): Promise<Service> {
  const { dir, cleanup } = await tempDir('turn-checks-');
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const model: Provider = { name: 'quick', complete: async () => ({ text: 'done', tool_calls: [], finish_reason: 'stop' }) };
  const service = await Service.open({ dataDir: dir, provider: () => model });
  t.after(async () => {
    await service.stop();
    await cleanup();
  });
  return service;
}

test('a chat into a conversation its sender may not see is refused like one that does not exist (not_found), and stores nothing', { timeout: 60_000 }, async (t) => {
  const service = await quickService(t);
  const crm = { kind: 'webhook', account: 'crm' } as const;
  const { conversation_id: conversationId } = await service.agent.chat({ message: 'from the crm', source: crm, worktree: false });
  const before = (await service.store.messages.recent(conversationId, { limit: 10 })).length;
  const refused = (error: unknown) => error instanceof ServiceError && error.code === 'not_found' && error.message === `conversation ${conversationId} not found`;
  // Another account's session, and a conversation that never was: the same answer.
  await assert.rejects(service.agent.chat({ message: 'from elsewhere', conversationId, source: { kind: 'webhook', account: 'other' } }), refused);
  await assert.rejects(
    service.agent.chat({ message: 'nowhere', conversationId: 'no-such-conversation', source: crm }),
    (error: unknown) => error instanceof ServiceError && error.code === 'not_found',
  );
  assert.equal((await service.store.messages.recent(conversationId, { limit: 10 })).length, before);
  // Its own account, and the LAN (which sees every conversation), go on.
  assert.equal((await service.agent.chat({ message: 'again', conversationId, source: crm })).response, 'done');
  assert.equal((await service.agent.chat({ message: 'from the lan', conversationId, source: { kind: 'lan' } })).response, 'done');
});

// The owner kept in memory (s19, turn19a) never outlives a delete. Both failed against a naive cache.
const notFound = (error: unknown) => error instanceof ServiceError && error.code === 'not_found';

test('a conversation deleted by one client refuses the next chat of another that sent to it before (not_found), and stores nothing', { timeout: 60_000 }, async (t) => {
  const service = await quickService(t);
  const phone = { kind: 'relay' } as const;
  const { conversation_id: conversationId } = await service.agent.chat({ message: 'first', source: phone });
  assert.equal((await service.agent.chat({ message: 'second', conversationId, source: phone })).response, 'done');
  // The LAN client deletes it.
  assert.equal(await service.store.conversations.delete(conversationId), true);
  await assert.rejects(service.agent.chat({ message: 'third', conversationId, source: phone }), notFound);
  assert.equal(service.store.conversations.get(conversationId), undefined);
  assert.deepEqual(await service.store.messages.recent(conversationId, { limit: 10 }), []);
});

test("an id deleted and made again by another source refuses its first owner's chats, and the new owner's go on", { timeout: 60_000 }, async (t) => {
  const service = await quickService(t);
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
