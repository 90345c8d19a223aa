// The transcript's kept parts (agent/transcript.ts Transcripts): each step gives the model exactly what
// transcriptOf gives for the same rows, as the history grows, as its window slides past old rows (cut
// inside a tool batch too), and when a row is not the one the part was made from.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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

// s14 (lean14): the last call is kept flat and the run of rows agreeing with it is taken whole. Windows that
// jump back and forth, shrink and grow, rows read again as other objects, a second conversation in between,
// and a caller changing the array it passed: every call is still exactly transcriptOf's.
test('any sequence of windows, rows read again, two conversations, a caller changing its array: every call is transcriptOf', () => {
  const one = conversation(60);
  const other = conversation(20).map((r) => ({ ...r, conversation_id: 'other' }));
  const transcripts = new Transcripts();
  let state = 7;
  const random = (n: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state % n;
  };
  let end = 0;
  for (let call = 0; call < 2_000; call += 1) {
    const pick = random(10);
    let rows: MessageRow[];
    if (pick === 0) rows = other.slice(random(other.length), other.length);
    else {
      end = pick <= 6 ? Math.min(one.length, end + random(4)) : random(one.length + 1);
      rows = one.slice(Math.max(0, end - 1 - random(40)), end);
      // A row read again (a retention cut, the cache forgotten): the same row, another object.
      if (pick === 9 && rows.length > 0) {
        const at = random(rows.length);
        rows[at] = { ...rows[at], content: `${rows[at].content} again` };
      }
    }
    const lead = random(2) === 0 ? [] : [{ role: 'system' as const, content: 'system' }];
    assert.deepEqual(transcripts.of(rows, lead), [...lead, ...transcriptOf(rows)], `call ${call}`);
    // What the caller does with its array afterwards reaches no later call.
    if (random(3) === 0) rows.reverse();
  }
});

test('a row the caller changes in its array after a call, then passes again, is given as changed', () => {
  const transcripts = new Transcripts();
  const rows = conversation(8);
  transcripts.of(rows);
  const at = rows.findIndex((r) => r.content === 'answer 3');
  rows[at] = { ...rows[at], content: 'changed after the call' };
  assert.deepEqual(transcripts.of(rows), transcriptOf(rows));
});

/** A full, synchronous garbage collection (the flag set at run time, `gc` taken from a fresh context). */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

test('a window too big to hold between calls is not held (the history cache does not keep such a conversation either); a small one is', async () => {
  const transcripts = new Transcripts();
  const held = (content: string) => {
    const rows = [row('user', 'q'), row('assistant', content), row('user', 'q2')];
    const out = transcripts.of(rows);
    assert.deepEqual(out, transcriptOf(rows));
    return new WeakRef(rows[1]);
  };
  const small = held('a small answer');
  const big = held('x'.repeat(20_000_000));
  // WeakRefs keep their target until the job that made them ends.
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  assert.equal(big.deref(), undefined, 'the big window was held');
  const kept = held('another small answer');
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  assert.notEqual(kept.deref(), undefined, 'the last small window is held (the next call compares with it)');
  assert.equal(small.deref(), undefined, 'an older window is let go');
  const newest = held('the newest answer');
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  assert.equal(kept.deref(), undefined, 'the call before the last is let go');
  assert.notEqual(newest.deref(), undefined);
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
