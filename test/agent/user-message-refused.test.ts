// review17d: the user message's transaction is planned (Database.writePlanned: its record handed to the
// journal before its statements run). A statement failing after that hand-off (here the UNIQUE index on
// a message's client key: the same key sent again, as a resend the resend list no longer remembers) rolls
// it back and voids its record, but moves the database's last write twice: the turn took that for
// "applied", asked the model about a history without the message and stored a reply after nothing. The
// turn must fail before the model is asked, store nothing, and a restart must bring nothing back.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { tempDir } from '../helpers/temp';

test('a user message refused after its record was handed off: the model is not asked and nothing is stored, now or after a restart', { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('user-message-refused-');
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  let calls = 0;
  const provider: Provider = {
    name: 'counting',
    async complete(): Promise<CompletionResult> {
      calls += 1;
      return { text: 'done', tool_calls: [], finish_reason: 'stop' };
    },
  };
  let service = await Service.open({ dataDir: dir, provider: () => provider });
  // Stopped before its directory goes (hooks run in the order they were added), whichever service is open.
  t.after(async () => {
    await service.stop();
    await cleanup();
  });
  const first = await service.agent.chat({ message: 'first', source: { kind: 'lan' }, clientKey: 'K' });
  const id = first.conversation_id;
  const stored = async () => (await service.store.messages.recent(id, { limit: 100 })).map((m) => `${m.role}:${m.content}`);
  assert.deepEqual(await stored(), ['user:first', 'assistant:done']);
  const asked = calls;
  await assert.rejects(service.agent.chat({ message: 'second', conversationId: id, source: { kind: 'lan' }, clientKey: 'K' }), /UNIQUE/);
  assert.equal(calls, asked, 'the model is not asked about a message that was not stored');
  assert.deepEqual(await stored(), ['user:first', 'assistant:done']);
  await service.stop();
  service = await Service.open({ dataDir: dir, provider: () => provider });
  assert.deepEqual(await stored(), ['user:first', 'assistant:done'], 'a restart brings nothing back');
});
