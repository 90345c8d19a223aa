// Compactor.modelView (its budget check takes Transcripts.counted, the tokens summed as the call is built, s15 turn15) (counted tokens) against the pre-merge formula (messagesTokens over the
// view after the system messages, a summary's message included), with summaries, notices, attachments, context, big tool outputs, a
// sliding window, rows read again (new objects), and budgets at the exact boundary.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Compactor } from '../../src/agent/compaction/compactor';
import { Transcripts, transcriptOf } from '../../src/agent/transcript';
import { messagesTokens } from '../../src/agent/compaction/budget';
import { cutToolOutputs, fitToBudget, sinceSummary, summaryMessage } from '../../src/agent/compaction/model-view';
import type { ChatMessage } from '../../src/agent/providers/types';
import type { MessageRow } from '../../src/store';

let seq = 0;
function row(role: MessageRow['role'], content: string, data: unknown = null, toolName: string | null = null): MessageRow {
  seq += 1;
  return { seq, id: `r${seq}`, conversation_id: 'c', role, content, timestamp: '', tool_name: toolName, user_id: null, data, client_key: null };
}
let s = 7;
const random = (n: number) => ((s = (s * 1103515245 + 12345) % 2147483648), s % n);

function oldView(rows: readonly MessageRow[], system: ChatMessage[], budget: number): ChatMessage[] {
  const { summary, tail } = sinceSummary(rows);
  const lead = summary ? [...system, summaryMessage(summary.content)] : system;
  const messages = [...lead, ...transcriptOf(tail)];
  if (messagesTokens(messages, system.length) <= budget) return messages;
  const cut = cutToolOutputs(messages.slice(system.length), budget);
  if (messagesTokens(cut) <= budget) return [...system, ...cut];
  return fitToBudget(system, cut, budget).messages;
}

test('modelView decides as a fresh count of the view does, at every step of 3,000 (summaries, notices, attachments, context, large tool outputs, sliding windows, budgets at the boundary)', async () => {
  const compactor = new Compactor({} as never, { info() {}, warn() {} } as never, new Transcripts());
  const all: MessageRow[] = [];
  const system: ChatMessage[] = [{ role: 'system', content: 'sys' }];
  const decisions = { within: 0, over: 0 };
  for (let step = 0; step < 3000; step += 1) {
    const k = random(10);
    if (k < 3)
      all.push(
        row(
          'user',
          'q'.repeat(random(200)),
          random(3) === 0
            ? { attachments: [{ attachment_id: 'a', name: 'x.png', mime: 'image/png', kind: 'image', size: 1, hash: 'h' }] }
            : random(3) === 0
              ? { context: [{ kind: 'selection', path: 'f', text: 'zz' }] }
              : null,
        ),
      );
    else if (k < 5) all.push(row('assistant', 'a'.repeat(random(300))));
    else if (k < 7) {
      const batch = `b${step}`;
      all.push(row('tool', '{}', { kind: 'call', call_id: `${batch}-1`, batch, arguments: { p: 1 } }, 'read_file'));
      all.push(row('tool', 'o'.repeat(random(5000)), { kind: 'result', call_id: `${batch}-1`, ok: true }, 'read_file'));
    } else if (k === 7 && all.length > 4) all.push(row('summary', 's'.repeat(random(400)), { kind: 'summary', through_seq: all[random(all.length)].seq, summarised: 3 }));
    else if (k === 8) all.push(row('summary', 'failed', { kind: 'compaction_failed', reason: 'x' }));
    // Sometimes the rows are read again (new objects, as after a retention cut).
    if (random(50) === 0) for (let i = 0; i < all.length; i += 1) all[i] = { ...all[i] };
    const window = random(4) === 0 ? 15 : 60;
    const rows = all.slice(Math.max(0, all.length - window));
    const ref = oldView(rows, system, 1e9);
    const total = messagesTokens(ref, system.length);
    const budget = Math.max(0, total + random(3) - 1 - (random(5) === 0 ? random(3000) : 0));
    const expected = oldView(rows, system, budget);
    const got = await compactor.modelView(rows, system, { conversationId: 'c', provider: {} as never, model: 'm', budget: { window: 0, reply: 0, fixed: 0, history: budget } }, false);
    assert.deepEqual(got.messages, expected, `step ${step}`);
    if (budget >= total) decisions.within += 1;
    else decisions.over += 1;
  }
  // Both sides of the check were met (a request within its budget, one cut to fit).
  assert.ok(decisions.within > 100 && decisions.over > 100, JSON.stringify(decisions));
});
