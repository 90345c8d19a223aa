// The transcript's kept parts (agent/transcript.ts Transcripts): each step gives the model exactly what
// transcriptOf gives for the same rows, as the history grows, as its window slides past old rows (cut
// inside a tool batch too), and when a row is not the one the part was made from.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Transcripts, transcriptOf } from '../../src/agent/transcript';
import { estimateTokens } from '../../src/agent/history';
import type { MessageRow } from '../../src/store';

let seq = 0;
function row(role: MessageRow['role'], content: string, data: unknown = null, toolName: string | null = null): MessageRow {
  seq += 1;
  return { seq, id: `r${seq}`, conversation_id: 'c', role, content, timestamp: '', tool_name: toolName, user_id: null, data, client_key: null };
}

/** A conversation's rows: turns with and without tools, text before calls, an interrupted call, context on a user message. */
function conversation(turns: number): MessageRow[] {
  const rows: MessageRow[] = [];
  for (let t = 0; t < turns; t += 1) {
    const context = t % 4 === 1 ? { context: [{ kind: 'selection', path: `f${t}.ts`, text: 'a ``` b' }] } : null;
    rows.push(row('user', `question ${t}`, context));
    for (let step = 0; step < t % 3; step += 1) {
      const batch = `b${t}-${step}`;
      if (step === 1) rows.push(row('assistant', `looking ${t}`));
      rows.push(row('tool', '{}', { kind: 'call', call_id: `${batch}-1`, batch, arguments: { path: `p${t}` } }, 'read_file'));
      rows.push(row('tool', '{}', { kind: 'call', call_id: `${batch}-2`, batch, arguments: {} }, 'list_directory'));
      rows.push(row('tool', `out ${t}`, { kind: 'result', call_id: `${batch}-1`, ok: true }, 'read_file'));
      // The second call of every third turn's batch never got its result (a crash): "interrupted".
      if (t % 3 !== 2) rows.push(row('tool', `out2 ${t}`, { kind: 'result', call_id: `${batch}-2`, ok: true }, 'list_directory'));
    }
    if (t % 5 !== 4) rows.push(row('assistant', `answer ${t}`));
  }
  return rows;
}

test('every step is what transcriptOf gives: the history growing row by row, its window sliding (cut anywhere)', () => {
  const all = conversation(40);
  const transcripts = new Transcripts();
  for (const window of [all.length, 25, 7]) {
    for (let end = 1; end <= all.length; end += 1) {
      const rows = all.slice(Math.max(0, end - window), end);
      assert.deepEqual(transcripts.of(rows), transcriptOf(rows), `window ${window}, rows up to ${end}`);
    }
  }
});

test('with system messages to lead: they come first, then exactly what transcriptOf gives, in a fresh array each call', () => {
  const all = conversation(12);
  const transcripts = new Transcripts();
  const lead = [
    { role: 'system' as const, content: 'system' },
    { role: 'user' as const, content: 'a summary' },
  ];
  let previous: readonly unknown[] | undefined;
  for (let end = 0; end <= all.length; end += 1) {
    const rows = all.slice(Math.max(0, end - 9), end);
    const out = transcripts.of(rows, lead);
    assert.deepEqual(out, [...lead, ...transcriptOf(rows)], `rows up to ${end}`);
    assert.notEqual(out, previous);
    previous = out;
  }
  assert.deepEqual(transcripts.of([], lead), lead);
  assert.notEqual(transcripts.of([], lead), lead, 'not the lead itself: the caller may change what it gets');
});

test('a part whose first row is the same but a later row another is made again', () => {
  const all = conversation(6);
  const transcripts = new Transcripts();
  transcripts.of(all);
  // The same first row and length, a different answer (a cache that read the conversation again).
  const at = all.findIndex((r) => r.content === 'answer 0');
  const changed = [...all];
  changed[at] = { ...all[at], content: 'another answer' };
  assert.deepEqual(transcripts.of(changed), transcriptOf(changed));
  assert.ok(transcripts.of(changed).some((m) => m.content === 'another answer'));
});

test("tool calls are counted by their own JSON, also when another message's calls were counted before", () => {
  const one = { role: 'assistant' as const, content: '', tool_calls: [{ id: '1', name: 'read_file', arguments: { path: 'a' } }] };
  const longer = { role: 'assistant' as const, content: '', tool_calls: [{ id: '1', name: 'read_file', arguments: { path: 'a'.repeat(400) } }] };
  const plain = (m: typeof one) => Math.ceil(JSON.stringify(m.tool_calls).length / 4) + 4;
  assert.equal(estimateTokens(one), plain(one));
  assert.equal(estimateTokens(longer), plain(longer));
  assert.equal(estimateTokens(one), plain(one));
});
