// The turn's user message is in the journal's file before the model is asked (a process killed from then
// on keeps it: a resend finds it and nothing runs twice). With nothing else in flight its record is written
// on the loop (Journal.writeNow); a write the disk refuses there takes the roads of a write the pool
// refused: a full disk answers the turn with the disk-full error and leaves the record owed, written once
// there is room; any other failure stops the journal. Either way the model is not asked, nothing of the
// turn is told, and nothing acknowledged is lost.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { fullDiskFake } from '../helpers/full-disk-fake';
import { loopWriteFault } from '../helpers/loop-write-fault';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };

/** The journal's segments as they are in the file now, read synchronously. */
function journalText(dir: string): string {
  return readdirSync(dir)
    .filter((n) => /^service\.db\.journal\.[0-9]+$/.test(n))
    .map((n) => readFileSync(join(dir, n), 'utf8'))
    .join('');
}

async function serviceIn(dir: string, provider: Provider): Promise<Service> {
  return Service.open({ dataDir: dir, provider: () => provider });
}

async function workspace(prefix: string, t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { dir, cleanup } = await tempDir(prefix);
  t.after(cleanup);
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  return dir;
}

test("the user message's record is in the journal's file when the model is asked (a new conversation's and a later one's)", LIMIT, async (t) => {
  const dir = await workspace('user-message-written-', t);
  // The message each turn sends (its text is in its record, and in the request).
  let sending = '';
  const seen: { asked: boolean; inFile: boolean }[] = [];
  const provider: Provider = {
    name: 'reading',
    async complete(request): Promise<CompletionResult> {
      seen.push({ asked: JSON.stringify(request.messages).includes(sending), inFile: journalText(dir).includes(sending) });
      return { text: 'done', tool_calls: [], finish_reason: 'stop' };
    },
  };
  const service = await serviceIn(dir, provider);
  t.after(() => service.stop());
  sending = 'first-message-7c1e';
  const first = await service.agent.chat({ message: sending, source: { kind: 'lan' } });
  for (const message of ['second-message-92ad', 'third-message-0b3f']) {
    sending = message;
    await service.agent.chat({ message, conversationId: first.conversation_id, source: { kind: 'lan' } });
  }
  assert.deepEqual(seen, Array(3).fill({ asked: true, inFile: true }));
});

test(
  'a full disk refusing the user message\u2019s write: the turn answers the disk-full error, the model is not asked; once there is room the message is written and the next turn works',
  LIMIT,
  async (t) => {
    const dir = await workspace('user-message-full-', t);
    let asked = 0;
    const provider: Provider = {
      name: 'counting',
      async complete(): Promise<CompletionResult> {
        asked++;
        return { text: 'done', tool_calls: [], finish_reason: 'stop' };
      },
    };
    let service = await serviceIn(dir, provider);
    let stopped = false;
    t.after(() => (stopped ? undefined : service.stop()));
    const disk = await fullDiskFake(t);
    const id = (await service.agent.chat({ message: 'first', source: { kind: 'lan' } })).conversation_id;
    // The reply's flush ends a few microtasks after the turn: the next user message meets an idle journal.
    await new Promise((resolve) => setImmediate(resolve));
    const events: string[] = [];
    disk.set('writes');
    await assert.rejects(
      service.agent.chat({ message: 'second', conversationId: id, source: { kind: 'lan' } }, (e) => events.push(e.event)),
      /disk full/,
    );
    assert.equal(asked, 1, 'the model is not asked about a message not in the file');
    assert.deepEqual(events, [], 'nothing of the turn is told');
    disk.set('none');
    assert.equal((await service.agent.chat({ message: 'third', conversationId: id, source: { kind: 'lan' } })).response, 'done');
    const contents = async () => (await service.store.messages.recent(id, { limit: 20 })).map((m) => m.content);
    assert.deepEqual(await contents(), ['first', 'done', 'second', 'third', 'done'], 'the refused message was applied, and written first once there was room');
    await service.stop();
    service = await serviceIn(dir, provider);
    assert.deepEqual(await contents(), ['first', 'done', 'second', 'third', 'done'], 'a restart gives what the live service held');
    await service.stop();
    stopped = true;
  },
);

test(
  'the user message\u2019s write failing otherwise (EIO): the turn answers that the store must be restarted, the model is not asked, and a restart keeps every acknowledged message',
  LIMIT,
  async (t) => {
    const dir = await workspace('user-message-eio-', t);
    let asked = 0;
    const provider: Provider = {
      name: 'counting',
      async complete(): Promise<CompletionResult> {
        asked++;
        return { text: 'done', tool_calls: [], finish_reason: 'stop' };
      },
    };
    let service = await serviceIn(dir, provider);
    let stopped = false;
    t.after(() => (stopped ? undefined : service.stop()));
    const loop = loopWriteFault(t);
    const id = (await service.agent.chat({ message: 'first', source: { kind: 'lan' } })).conversation_id;
    await new Promise((resolve) => setImmediate(resolve));
    const written = loop.count();
    loop.set('EIO');
    const events: string[] = [];
    await assert.rejects(
      service.agent.chat({ message: 'second', conversationId: id, source: { kind: 'lan' } }, (e) => events.push(e.event)),
      /could not be written \(EIO: .*\); restart the service/,
    );
    assert.equal(loop.count(), written + 1, 'its record was written on the loop');
    assert.equal(asked, 1, 'the model is not asked');
    assert.deepEqual(events, []);
    loop.set('none');
    await assert.rejects(service.agent.chat({ message: 'third', conversationId: id, source: { kind: 'lan' } }), /restart the service/);
    assert.equal(asked, 1);
    await service.stop();
    service = await serviceIn(dir, provider);
    assert.deepEqual(
      (await service.store.messages.recent(id, { limit: 20 })).map((m) => m.content),
      ['first', 'done'],
    );
    assert.equal((await service.agent.chat({ message: 'fourth', conversationId: id, source: { kind: 'lan' } })).response, 'done');
    await service.stop();
    stopped = true;
  },
);
