// "N more characters left out" notes count what the cut actually left out: firstUnits keeps one unit fewer
// when the cap falls inside a surrogate pair, so `length - cap` was one short (s23, polish23).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cutToolOutputs, fitToBudget } from '../../src/agent/compaction/model-view';
import { transcriptChunks } from '../../src/agent/compaction/summariser';
import { draftCommitMessage } from '../../src/agent/commit-message';
import type { CompletionRequest, Provider } from '../../src/agent/providers/types';
import { runToolCall } from '../../src/agent/tool-runner';
import type { Tool } from '../../src/agent/tools/types';
import { nullLogger } from '../../src/log/logger';
import { unitsCut } from '../../src/protocol/code-points';
import type { MessageRow } from '../../src/store';

const PAIR = '\u{1F600}';
/** A text whose surrogate pair sits astride `cap`: its high surrogate is unit `cap - 1`. */
const astride = (cap: number, tail = 50) => `${'x'.repeat(cap - 1)}${PAIR}${'y'.repeat(tail)}`;

/** The head before `note` and the count the note gives; they must add up to the whole text. */
function assertAddsUp(out: string, note: RegExp, whole: string): void {
  const match = note.exec(out);
  assert.ok(match, out.slice(-200));
  const head = out.slice(0, match.index);
  assert.ok(head.isWellFormed(), 'never half a pair');
  assert.equal(head.length + Number(match[1]), whole.length, `head ${head.length} + count ${match[1]} vs ${whole.length}`);
}

test('unitsCut: the head and what it left out add up to the text, a pair astride the cap or not', () => {
  assert.deepEqual(unitsCut(`ab${PAIR}c`, 3), { head: 'ab', leftOut: 3 });
  assert.deepEqual(unitsCut(`ab${PAIR}c`, 4), { head: `ab${PAIR}`, leftOut: 1 });
  assert.deepEqual(unitsCut('abc', 9), { head: 'abc', leftOut: 0 });
  assert.deepEqual(unitsCut('abc', 0), { head: '', leftOut: 3 });
});

test("compaction's cut of an old tool output (300 units) counts the whole pair it left out", () => {
  const whole = astride(300, 400);
  const [tool] = cutToolOutputs(
    [
      { role: 'tool', content: whole, tool_call_id: 'c1', name: 'read_file' },
      { role: 'user', content: 'next' },
    ],
    1,
  );
  assertAddsUp(tool.content, /\n\[output cut to fit the context window: (\d+) more characters left out/, whole);
});

test("the context window's last-resort cut of the newest message counts the whole pair it left out", () => {
  const budget = 100;
  const whole = astride((budget - 64) * 4, 1000);
  const { messages } = fitToBudget([], [{ role: 'user', content: whole }], budget);
  assertAddsUp(messages.at(-1)!.content as string, /\n\[cut to fit the context window: (\d+) characters left out\]/, whole);
});

test("the summariser's transcript cut of a tool result (1,000 units) counts the whole pair it left out", () => {
  const whole = astride(1000);
  const row: MessageRow = {
    seq: 1,
    id: 'r1',
    conversation_id: 'c',
    role: 'tool',
    content: whole,
    timestamp: '',
    tool_name: 'read_file',
    user_id: null,
    data: { kind: 'result', ok: true },
    client_key: null,
  };
  const [chunk] = transcriptChunks([row], 100_000);
  const body = chunk.slice(chunk.indexOf('\n') + 1);
  assertAddsUp(body, / \[… (\d+) more characters\]$/, whole);
});

test("a commit message's diff cut (24,000 units) counts the whole pair it left out", async () => {
  const whole = astride(24_000);
  let sent = '';
  const provider: Provider = {
    name: 'fake',
    complete(request: CompletionRequest) {
      sent = String(request.messages.at(-1)!.content);
      return Promise.resolve({ text: 'Change things', tool_calls: [], finish_reason: 'stop' });
    },
  };
  await draftCommitMessage(provider, 'm', whole, 100);
  assertAddsUp(sent.slice('The diff:\n\n'.length), /\n\[… (\d+) more characters of the diff not shown\]$/, whole);
});

test("a tool's result cut (100,000 units) counts the whole pair it left out", async () => {
  const whole = astride(100_000);
  const tool = { name: 'big', description: '', inputSchema: { type: 'object' }, parameters: {}, conversationOnly: true, run: () => Promise.resolve({ content: whole }) } as unknown as Tool;
  const result = await runToolCall({ id: 'c1', name: 'big', arguments: {} }, tool, {
    conversationId: 'c',
    source: 'test',
    signal: new AbortController().signal,
    gate: undefined as never,
    logger: nullLogger,
    timeoutMs: 60_000,
  });
  assertAddsUp(result.content, /\n\[\.\.\. (\d+) characters cut\]$/, whole);
});

test('fitToBudget: a short message over the budget only through its attachments is kept whole, with no note of a cut (review23a)', () => {
  const content = 'look at these';
  const attachments = [{ name: 'a.png' }, { name: 'b.png' }] as never;
  const { messages } = fitToBudget([], [{ role: 'user', content, attachments }], 1000);
  assert.equal(messages.at(-1)!.content, content, 'on main: "[cut to fit the context window: -3731 characters left out]", then "0 characters"');
});
