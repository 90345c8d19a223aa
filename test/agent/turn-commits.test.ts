// One durable commit per acknowledged message of an agent turn (issue 25): the user message (with a new
// conversation's row) and the reply (with the turn's usage) cost one journal flush each (one write and
// one fdatasync) at most: a turn whose model answers before anything is told (not streamed) shares one
// fdatasync for both (since s11: agent/user-commit.ts); history.db's bodies are written without an fsync of their own (journaled with the
// rows). Concurrent turns share them. Counted where they happen: the journal's flushes on this thread,
// history.db's fsyncs in its worker (HistoryStats.syncs).
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TurnEvent } from '../../src/agent/agent';
import type { CompletionRequest, CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };

/** Answers at once, streaming its one piece, with usage (stored with the reply). */
const quickModel: Provider = {
  name: 'quick',
  async complete(request: CompletionRequest): Promise<CompletionResult> {
    request.onDelta?.('done');
    return { text: 'done', tool_calls: [], finish_reason: 'stop', usage: { input_tokens: 10, output_tokens: 1 } };
  },
};

async function openService(t: { after: (fn: () => Promise<void>) => void }): Promise<Service> {
  const { dir, cleanup } = await tempDir('turn-commits-');
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => quickModel });
  t.after(async () => {
    await service.stop();
    await cleanup();
  });
  return service;
}

/** Journal flushes and history.db fsyncs so far. */
async function commits(service: Service): Promise<number> {
  return service.store.db.stats().flushes + (await service.store.history.stats()).syncs;
}

test('an agent turn costs one durable commit per message (a new conversation, the usage ride along); 8 concurrent turns share them', LIMIT, async (t) => {
  const service = await openService(t);
  const { store } = service;
  const first = await commits(service);
  let conversationId = (await service.agent.chat({ message: 'first', source: { kind: 'lan' } })).conversation_id;
  assert.equal((await commits(service)) - first, 1, "durable commits of a new conversation's first turn");

  const perTurn: number[] = [];
  for (let i = 0; i < 8; i++) {
    const before = await commits(service);
    const flushed = store.db.stats().flushes;
    const events: Array<{ event: string; flushes: number }> = [];
    const out = await service.agent.chat({ message: `turn ${i}`, conversationId, source: { kind: 'lan' }, stream: true }, (e: TurnEvent) =>
      events.push({ event: e.event, flushes: store.db.stats().flushes }),
    );
    conversationId = out.conversation_id;
    perTurn.push((await commits(service)) - before);
    // The user message is shown first, once durable (after the flush that holds it).
    assert.deepEqual(
      events.map((e) => e.event),
      ['chat.message', 'chat.delta', 'chat.message'],
    );
    assert.ok(events[0].flushes > flushed, 'the user message is shown after its flush');
  }
  assert.deepEqual(perTurn, [2, 2, 2, 2, 2, 2, 2, 2], 'durable commits per turn');
  const stored = await store.messages.recent(conversationId, { limit: 100 });
  assert.equal(stored.length, 18);
  assert.equal(stored.at(-1)?.content, 'done');
  assert.equal((await store.usage.ofMessages([stored.at(-1)!.id])).get(stored.at(-1)!.id)?.output, 1, 'the usage is stored with the reply');

  // Eight conversations at once: their messages share commits, their replies too. A batch is flushed on
  // the loop's next turn, so on a quiet machine the eight messages share one commit and the replies
  // another (2; 1 since s11, the messages' records written and synced with the replies); on a loaded one a turn whose reads before its write (instruction files, git) end a
  // loop turn later joins the next batch: at most two a side, against 16 unshared.
  const ids = await Promise.all(Array.from({ length: 8 }, async (_, i) => (await service.agent.chat({ message: `start ${i}`, source: { kind: 'lan' } })).conversation_id));
  const before = await commits(service);
  await Promise.all(ids.map((id, i) => service.agent.chat({ message: `again ${i}`, conversationId: id, source: { kind: 'lan' } })));
  const shared = (await commits(service)) - before;
  assert.ok(shared >= 1 && shared <= 4, `durable commits for 8 concurrent turns: ${shared}`);
});
