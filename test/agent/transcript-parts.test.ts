// The transcript's kept parts (agent/transcript.ts Transcripts): each step gives the model exactly what
// transcriptOf gives for the same rows, as the history grows, as its window slides past old rows (cut
// inside a tool batch too), and when a row is not the one the part was made from.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HistoryCache } from '../../src/agent/history-cache';
import { Transcripts, transcriptOf } from '../../src/agent/transcript';
import { estimateTokens } from '../../src/agent/history';
import { messagesTokens } from '../../src/agent/compaction/budget';
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
      const made = transcripts.counted(rows);
      assert.deepEqual(made.messages, transcriptOf(rows), `window ${window}, rows up to ${end}`);
      // s15 (turn15): what the model view checks against the budget, summed as the call is made.
      assert.equal(made.tokens, messagesTokens(transcriptOf(rows)), `window ${window}, rows up to ${end}: its tokens`);
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
    const made = transcripts.counted(rows, lead);
    assert.deepEqual(made.messages, [...lead, ...transcriptOf(rows)], `call ${call}`);
    assert.equal(made.tokens, messagesTokens(transcriptOf(rows)), `call ${call}: its tokens`);
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

/** A write_file batch whose result carries a diff of `size` characters (the protocol's cap is 200,000): bytes the model is not sent. */
function writes(conversationId: string, count: number, size: number): MessageRow[] {
  const rows = [{ ...row('user', 'write the files'), conversation_id: conversationId }];
  for (let i = 0; i < count; i += 1) {
    const call = `w${seq}`;
    rows.push({ ...row('tool', '{}', { kind: 'call', call_id: call, batch: call, arguments: { path: `f${i}` } }, 'write_file'), conversation_id: conversationId });
    const detail = { kind: 'diff', path: `f${i}`, diff: `${i}`.padEnd(size, 'd'), new_file: true, truncated: false };
    rows.push({ ...row('tool', 'Wrote the file.', { kind: 'result', call_id: call, ok: true, detail }, 'write_file'), conversation_id: conversationId });
  }
  return rows;
}

test('the flat transcripts hold rows only while the history cache holds their conversation (diffs in rows are bytes the token bound does not see)', async () => {
  const all = new Map(['a', 'b', 'c', 'd'].map((c) => [c, writes(c, 40, 200_000)]));
  let transcripts: Transcripts;
  const cache = new HistoryCache(
    { recent: async (id: string) => all.get(id)!.slice(), after: async () => [], seqOf: () => undefined },
    { maxBytes: 12_000_000, forgotten: (id) => transcripts.forget(id) },
  );
  transcripts = new Transcripts({ kept: (id) => cache.holds(id) });
  const refs: WeakRef<MessageRow>[] = [];
  for (const id of all.keys()) {
    const given = await cache.rows(id);
    assert.deepEqual(transcripts.of(given), transcriptOf(all.get(id)!));
    refs.push(new WeakRef(all.get(id)![2]!));
  }
  // 8 MB a conversation under a 12 MB cache: only the last one is kept by the cache, and only it by the transcripts.
  all.clear();
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  assert.deepEqual(
    refs.map((r) => r.deref() !== undefined),
    [false, false, false, true],
  );
});

test('a conversation forgotten (deleted) lets go of its transcript', async () => {
  const transcripts = new Transcripts();
  const a = [
    { ...row('user', 'secret of A'), conversation_id: 'a' },
    { ...row('assistant', 'answer of A'), conversation_id: 'a' },
  ];
  assert.deepEqual(transcripts.of(a), transcriptOf(a));
  const ref = new WeakRef(a[1]!);
  a.length = 0;
  transcripts.forget('a');
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  assert.equal(ref.deref(), undefined, "a forgotten conversation's rows are held");
});

test('a call that throws leaves nothing to the next call (of another conversation)', () => {
  const transcripts = new Transcripts();
  // A user row whose context cannot be read makes the call throw after its first parts were made.
  const broken = [row('user', 'secret of C'), row('assistant', 'answer of C'), row('user', 'bad', { context: [null] })];
  assert.throws(() => transcripts.of(broken));
  const b = [{ ...row('user', 'hello from B'), conversation_id: 'b' }];
  assert.deepEqual(transcripts.of(b), transcriptOf(b));
});
