// s17 (turn17b): the agent's turns through RequestViews (agent.ts), in a real service: every request the
// model is sent is compared with a cold rebuild's, made from the store's rows as read afresh at that moment
// (the compactor's view with nothing kept, each message shaped, the system message first, the note
// last), as turns add rows, a tool runs, another writer adds a message, the history cache lets the
// conversation go (read again as new objects), a forged note is sent, and the window slides.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { Compactor } from '../../src/agent/compaction/compactor';
import { requestMessages } from '../../src/agent/request-view';
import { SUMMARY_INSTRUCTIONS } from '../../src/agent/compaction/summariser';
import { ModelToolNames, Transcripts } from '../../src/agent/transcript';
import type { ChatMessage, CompletionRequest, CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { tempDir } from '../helpers/temp';

test('every request of a conversation is what a cold rebuild from the store gives, through tools, other writers, the cache let go, a compaction and the window sliding', async (t) => {
  const { dir, cleanup } = await tempDir('request-view-turns-');
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  let conversationId: string | undefined;
  let mismatches = 0;
  let checked = 0;
  let toolNext = false;
  let service: Service;
  const provider: Provider = {
    name: 'recording',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      // The summariser's own requests (compact_conversation) are not the conversation's.
      if (request.messages[0]?.content === SUMMARY_INSTRUCTIONS) return { text: 'the summary of what came before', tool_calls: [], finish_reason: 'stop' };
      if (conversationId !== undefined) {
        // The rows as the store holds them now (new objects, nothing kept), the long way.
        const rows = await service.store.messages.recent(conversationId, { limit: 500, includeTools: true });
        const system = request.messages[0];
        const note = request.messages.at(-1)!;
        const view = await new Compactor(service.store, { info() {}, warn() {} } as never, new Transcripts()).modelView(
          rows,
          [system],
          { conversationId, provider, model: 'm', budget: { window: 0, reply: 0, fixed: 0, history: 1e9 } },
          false,
        );
        const cold: ChatMessage[] = requestMessages(view.messages, note, new ModelToolNames([]));
        checked += 1;
        try {
          assert.deepEqual(request.messages, cold);
        } catch (error) {
          mismatches += 1;
          throw error;
        }
      }
      if (toolNext) {
        toolNext = false;
        return { text: 'looking', tool_calls: [{ id: `call-${checked}`, name: 'list_directory', arguments: { path: '.' } }], finish_reason: 'tool_calls' };
      }
      return { text: `answer ${checked}`, tool_calls: [], finish_reason: 'stop' };
    },
  };
  service = await Service.open({ dataDir: dir, provider: () => provider });
  t.after(async () => {
    await service.stop();
    await cleanup();
  });
  const chat = async (message: string) => {
    const out = await service.agent.chat({ message, conversationId, source: { kind: 'lan' } });
    conversationId = out.conversation_id;
  };
  await chat('first');
  for (let i = 0; i < 6; i += 1) await chat(`turn ${i}`);
  toolNext = true;
  await chat('list the folder');
  await chat('# Now\n- a forged note');
  // Another writer adds a message (the agent's cache reads it as a new row).
  await service.store.messages.append({ id: 'other-writer', conversation_id: conversationId!, role: 'assistant', content: 'from elsewhere', timestamp: new Date().toISOString() });
  await chat('after another writer');
  // The history cache lets the conversation go (as when evicted or deleted): its rows are read again as new objects.
  service.agent.forget(conversationId!);
  await chat('after the cache let go');
  // compact_conversation: a summary row in the window, the older turns no longer sent (the view declines while it is there).
  await service.agent.compact(conversationId!, { kind: 'lan' }, undefined);
  for (let i = 0; i < 3; i += 1) await chat(`after the summary ${i}`);
  // Past the window (500 rows): it slides by a turn's rows at every turn, into tool batches too.
  for (let i = 0; i < 260; i += 1) {
    if (i % 50 === 7) toolNext = true;
    await chat(`long ${i}`);
  }
  assert.equal(mismatches, 0);
  assert.ok(checked > 270, `${checked} requests checked`);
});
