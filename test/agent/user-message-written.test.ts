// The turn's user message is in the journal's file before the model is asked (a process killed from then
// on keeps it: a resend finds it and nothing runs twice; docs/design.md, "One durable commit for a 0-tool
// turn"): the fake provider reads the segments when it is called. A guard for changes to the turn's order
// (written for s18's loop write of the record, dropped; it passes on main too).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
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
