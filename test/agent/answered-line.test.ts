// The turn's `chat.answered` log line (s19, turn19c): prepared while the reply is synced, stamped once it is
// durable and held off the turn's path (file-logger.ts HELD_LINE_MS): never in the file before the reply is
// told, not yet when the turn returns, not by the next turn (its prepare is made during its fdatasync: s34,
// path34), then written with the lines held meanwhile a moment later, or at stop, with its fields.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TurnEvent } from '../../src/agent/agent';
import type { CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { tempDir } from '../helpers/temp';

const model: Provider = {
  name: 'quick',
  async complete(): Promise<CompletionResult> {
    return { text: 'done!', tool_calls: [], finish_reason: 'stop' };
  },
};

/** The chat.answered lines in the service's log so far. */
const answered = (dir: string): Array<Record<string, unknown>> =>
  readFileSync(join(dir, 'service.log'), 'utf8')
    .split('\n')
    .filter((line) => line.includes('"chat.answered"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

test(
  "chat.answered: not in the file when the reply is told nor when the turn returns; written a moment later with the next turns' lines, or at stop, with ms and chars",
  { timeout: 60_000 },
  async (t) => {
    const { dir, cleanup } = await tempDir('answered-line-');
    t.after(cleanup);
    await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
    const service = await Service.open({ dataDir: dir, provider: () => model });
    let stopped = false;
    t.after(async () => {
      if (!stopped) await service.stop();
    });

    const atReply: number[] = [];
    const onEvent = (e: TurnEvent) => {
      if (e.event === 'chat.message' && e.message.role === 'assistant') atReply.push(answered(dir).length);
    };
    const first = await service.agent.chat({ message: 'hi', source: { kind: 'lan' } }, onEvent);
    assert.deepEqual(atReply, [0], 'no line when the reply (durable) is told');
    assert.equal(answered(dir).length, 0, 'held when the turn returns');

    await service.agent.chat({ message: 'again', conversationId: first.conversation_id, source: { kind: 'lan' } }, onEvent);
    // Both held, then written together by the held lines' timer (HELD_LINE_MS after the first).
    for (let i = 0; i < 1000 && answered(dir).length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const lines = answered(dir);
    assert.equal(lines.length, 2, 'both written a moment later');
    assert.ok(String(lines[0].time) <= String(lines[1].time), 'in order');

    await service.agent.chat({ message: 'once more', conversationId: first.conversation_id, source: { kind: 'lan' } }, onEvent);
    assert.equal(answered(dir).length, 2, 'held when the turn returns');
    stopped = true;
    await service.stop();
    const all = answered(dir);
    assert.equal(all.length, 3, 'stop writes the held line');
    for (const line of all) {
      assert.equal(line.chars, 5);
      assert.equal(typeof line.ms, 'number');
      assert.equal(line.conversation, first.conversation_id);
    }
  },
);

test('a stop whose store fails to close still closes the log (its held line written)', { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('answered-line-');
  t.after(cleanup);
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => model });
  const close = service.store.close.bind(service.store);
  let failed = false;
  service.store.close = async () => {
    await close();
    failed = true;
    throw new Error('the store failed to close');
  };
  await service.agent.chat({ message: 'hi', source: { kind: 'lan' } });
  assert.equal(answered(dir).length, 0, 'held when the turn returns');
  await assert.rejects(service.stop(), /failed to close/);
  assert.ok(failed);
  assert.equal(answered(dir).length, 1, 'the held line is written');
  // The log was closed all the same: a line logged now is dropped.
  service.logger.info('after.stop');
  await new Promise(setImmediate);
  assert.ok(!readFileSync(join(dir, 'service.log'), 'utf8').includes('after.stop'), 'the log is closed');
});
