// s17 (turn17b): each conversation's request view kept and extended (agent/request-view.ts RequestViews).
// Every request it gives is compared with a cold rebuild's (the long way: transcriptOf of the rows, each
// message shaped, the lead first and the note last), through every change that must make it decline
// or be made again: rows read again as other objects (a retention cut, the history cache's re-read),
// rows gone from the window's end (a deleted conversation made again), the window sliding (into a tool
// batch too), another tool list, the note on or off, a smaller budget, an attachment, a summary.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RequestViews, requestMessages, type Shaping } from '../../src/agent/request-view';
import { ModelToolNames, Transcripts, transcriptOf } from '../../src/agent/transcript';
import { Compactor } from '../../src/agent/compaction/compactor';
import { messagesTokens } from '../../src/agent/compaction/budget';
import type { ChatMessage } from '../../src/agent/providers/types';
import type { MessageRow } from '../../src/store';

let seq = 0;
function row(role: MessageRow['role'], content: string, data: unknown = null, toolName: string | null = null, conversation = 'c'): MessageRow {
  seq += 1;
  return { seq, id: `r${seq}`, conversation_id: conversation, role, content, timestamp: '', tool_name: toolName, user_id: null, data, client_key: null };
}

/** Turns with and without tools (an MCP-named one), text before calls, an interrupted call, a forged note in a user message. */
function conversation(turns: number, conversation = 'c'): MessageRow[] {
  const rows: MessageRow[] = [];
  for (let t = 0; t < turns; t += 1) {
    rows.push(row('user', t % 4 === 1 ? `question ${t}\n# Now\n- forged` : `question ${t}`, null, null, conversation));
    for (let step = 0; step < t % 3; step += 1) {
      const batch = `b${t}-${step}`;
      if (step === 1) rows.push(row('assistant', `looking ${t}`, null, null, conversation));
      rows.push(row('tool', '{}', { kind: 'call', call_id: `${batch}-1`, batch, arguments: { path: `p${t}` } }, 'read_file', conversation));
      rows.push(row('tool', '{}', { kind: 'call', call_id: `${batch}-2`, batch, arguments: {} }, 'mcp.list', conversation));
      rows.push(row('tool', `out ${t}`, { kind: 'result', call_id: `${batch}-1`, ok: true }, 'read_file', conversation));
      if (t % 3 !== 2) rows.push(row('tool', `out2 ${t}`, { kind: 'result', call_id: `${batch}-2`, ok: true }, 'mcp.list', conversation));
    }
    if (t % 5 !== 4) rows.push(row('assistant', `answer ${t}`, null, null, conversation));
  }
  return rows;
}

const SYSTEM: ChatMessage = { role: 'system', content: 'system' };
const NOTE: ChatMessage = { role: 'user', content: '# Now\n- the note', moment: true };
const NAMES = new ModelToolNames(['read_file', 'mcp.list']);

/** The request the long way (agent.ts before s17, the compactor's view within the budget): what every view must equal. */
function cold(rows: readonly MessageRow[], shaping: Shaping, note: ChatMessage | undefined = shaping.readable ? NOTE : undefined): ChatMessage[] {
  return [SYSTEM, ...requestMessages(transcriptOf(rows), note, shaping.names)];
}

function view(views: RequestViews, rows: readonly MessageRow[], shaping: Shaping, budget = 1e9) {
  return views.request(rows, SYSTEM, shaping.readable ? NOTE : undefined, shaping, budget);
}

test('every step is the cold rebuild: the history growing row by row, its window sliding (cut anywhere, into a tool batch too)', () => {
  const all = conversation(40);
  const shaping = { names: NAMES, readable: true };
  for (const window of [all.length, 25, 7, 2]) {
    const views = new RequestViews();
    for (let end = 1; end <= all.length; end += 1) {
      const rows = all.slice(Math.max(0, end - window), end);
      assert.deepEqual(view(views, rows, shaping), cold(rows, shaping), `window ${window}, rows up to ${end}`);
    }
  }
});

test('windows that jump, shrink and grow, rows read again as other objects, two conversations: every request is the cold rebuild', () => {
  const one = conversation(60);
  const other = conversation(20, 'other');
  const views = new RequestViews();
  const shaping = { names: NAMES, readable: true };
  let state = 7;
  const random = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  for (let i = 0; i < 2_000; i += 1) {
    const all = random(5) === 0 ? other : one;
    const end = 1 + random(all.length);
    let rows = all.slice(Math.max(0, end - 1 - random(40)), end);
    // Read again: the same rows as new objects, one of them changed (a retention cut of its body).
    if (random(6) === 0) {
      const changed = random(rows.length);
      rows = rows.map((r, j) => ({ ...r, content: j === changed ? `${r.content} (cut)` : r.content }));
      if (random(2) === 0) all.splice(all.length - rows.length, rows.length, ...rows);
    }
    assert.deepEqual(view(views, rows, shaping), cold(rows, shaping), `call ${i}`);
  }
});

test('a row read again as another object (a retention cut, a re-read) anywhere in the window: the view is made again', () => {
  const all = conversation(30);
  const shaping = { names: NAMES, readable: true };
  for (const at of [0, 1, 5, Math.floor(all.length / 2), all.length - 2, all.length - 1]) {
    const views = new RequestViews();
    const rows = all.slice(0, all.length - 1);
    view(views, rows, shaping);
    // The same seqs, one body changed (history.db's retention cut), the next row added.
    const again = all.map((r, j) => (j === at ? { ...r, content: 'cut to a stub' } : r));
    assert.deepEqual(view(views, again, shaping), cold(again, shaping), `row ${at} changed`);
  }
});

test('rows gone from the window (fewer than before, or other rows at the same seqs): the view is made again', () => {
  const all = conversation(20);
  const shaping = { names: NAMES, readable: true };
  const views = new RequestViews();
  view(views, all, shaping);
  const fewer = all.slice(0, all.length - 3);
  assert.deepEqual(view(views, fewer, shaping), cold(fewer, shaping));
  // Deleted and written again (the same seqs as other rows): none of them is the object seen before.
  const other = all.map((r) => ({ ...r, content: `${r.content}!` }));
  assert.deepEqual(view(views, other, shaping), cold(other, shaping));
});

test('appendOnly (the history cache vouches for the rows between the ends): sliding, growing, fewer rows, the ends read again, and forget: every request is the cold rebuild', () => {
  const shaping = { names: NAMES, readable: true };
  const all = conversation(40);
  for (const window of [all.length, 25, 7, 2]) {
    const views = new RequestViews({ appendOnly: true });
    for (let end = 1; end <= all.length; end += 1) {
      const rows = all.slice(Math.max(0, end - window), end);
      assert.deepEqual(view(views, rows, shaping), cold(rows, shaping), `window ${window}, rows up to ${end}`);
    }
  }
  const views = new RequestViews({ appendOnly: true });
  const rows = all.slice(0, 30);
  view(views, rows, shaping);
  // Fewer rows than before (the window's end gone: an undone turn), then the last row read again as another object.
  const fewer = all.slice(0, 27);
  assert.deepEqual(view(views, fewer, shaping), cold(fewer, shaping), 'fewer rows');
  const lastAgain = [...all.slice(0, 26), { ...all[26], content: 'cut to a stub' }, ...all.slice(27, 31)];
  assert.deepEqual(view(views, lastAgain, shaping), cold(lastAgain, shaping), "the overlap's last row another object");
  // The first row another object: not found where the view starts.
  const firstAgain = [{ ...lastAgain[0], content: 'cut' }, ...lastAgain.slice(1)];
  assert.deepEqual(view(views, firstAgain, shaping), cold(firstAgain, shaping), 'the first row another object');
  // A row between the ends changed: the caller forgets first (the history cache's re-read tells the agent's views so).
  const middle = firstAgain.map((r, j) => (j === 10 ? { ...r, content: 'changed in the middle' } : r));
  views.forget('c');
  assert.deepEqual(view(views, middle, shaping), cold(middle, shaping), 'a middle row changed, after forget');
});

test('another tool list (other model names) or the note on or off: the messages are shaped again', () => {
  const all = conversation(12);
  const views = new RequestViews();
  const renamed = new ModelToolNames(['mcp_list', 'mcp.list', 'read_file']);
  const steps: Shaping[] = [
    { names: NAMES, readable: true },
    { names: renamed, readable: true },
    { names: renamed, readable: false },
    { names: NAMES, readable: false },
    { names: NAMES, readable: true },
  ];
  for (const [i, shaping] of steps.entries()) {
    const rows = all.slice(0, all.length - steps.length + i + 1);
    assert.deepEqual(view(views, rows, shaping), cold(rows, shaping), `step ${i}`);
  }
  // The shapes differ where they should (the test would not see a shaping kept across them otherwise).
  assert.notDeepEqual(cold(all, steps[0]), cold(all, steps[1]));
  assert.notDeepEqual(cold(all, steps[1]), cold(all, steps[2]));
});

test('over the budget, with an attachment or a summary in the window it declines (the long way builds it), and serves again once they are gone', () => {
  const all = conversation(10);
  const shaping = { names: NAMES, readable: true };
  const views = new RequestViews();
  const tokens = messagesTokens(transcriptOf(all));
  assert.deepEqual(view(views, all, shaping, tokens), cold(all, shaping));
  assert.equal(view(views, all, shaping, tokens - 1), undefined, 'a smaller window: over the budget');
  const attached = row('user', 'see this', { attachments: [{ attachment_id: 'a', name: 'x.png', mime: 'image/png', kind: 'image', size: 1, hash: 'h' }] });
  const withAttachment = [...all, attached];
  assert.equal(view(views, withAttachment, shaping), undefined, 'an attachment');
  const summary = row('summary', 'what came before', { kind: 'summary', through_seq: all[3].seq, summarised: 4 });
  const withSummary = [...withAttachment, row('assistant', 'ok'), summary, row('user', 'next')];
  assert.equal(view(views, withSummary, shaping), undefined, 'a summary');
  // Without the attachment in the window (it slid out): the summary alone declines.
  const summaryAlone = withSummary.slice(withSummary.indexOf(attached) + 1);
  assert.equal(view(views, summaryAlone, shaping), undefined, 'a summary alone');
  const notice = [...all, row('summary', 'could not', { kind: 'compaction_failed', reason: 'x' })];
  assert.equal(view(views, notice, shaping), undefined, 'a failed compaction notice');
  // Slid past them: served again, as the cold rebuild.
  const later = [...withSummary, row('assistant', 'answer'), row('user', 'last')];
  const past = later.slice(later.indexOf(summary) + 1);
  assert.deepEqual(view(views, past, shaping), cold(past, shaping));
  const pastAttachment = later.slice(later.indexOf(attached) + 1).filter((r) => r.role !== 'summary');
  assert.deepEqual(view(views, pastAttachment, shaping), cold(pastAttachment, shaping));
});

test('a fresh array each request (the caller and the provider may keep it), views bounded to the conversations kept', () => {
  const all = conversation(8);
  const shaping = { names: NAMES, readable: true };
  let kept = true;
  const views = new RequestViews({ kept: () => kept });
  const first = view(views, all, shaping)!;
  const second = view(views, all, shaping)!;
  assert.notEqual(first, second);
  assert.deepEqual(first, second);
  first.length = 0;
  assert.deepEqual(view(views, all, shaping), cold(all, shaping));
  kept = false;
  const rows = [...all, row('user', 'more')];
  assert.deepEqual(view(views, rows, shaping), cold(rows, shaping));
  // Not kept: the next call makes it again (rows changed in between are not missed).
  const changed = rows.map((r, i) => (i === 0 ? { ...r, content: 'changed' } : r));
  kept = true;
  assert.deepEqual(view(views, changed, shaping), cold(changed, shaping));
});

test('whenever it serves, it is what the long way gives (the compactor view, each message shaped), at every step of 3,000 (summaries, notices, attachments, large tool outputs, sliding windows, budgets at the boundary)', async () => {
  const compactor = new Compactor({} as never, { info() {}, warn() {} } as never, new Transcripts());
  const views = new RequestViews();
  const shaping = { names: NAMES, readable: true };
  let state = 11;
  const random = (n: number) => ((state = (state * 1103515245 + 12345) % 2147483648), state % n);
  const all: MessageRow[] = [];
  const decisions = { served: 0, declined: 0 };
  for (let step = 0; step < 3000; step += 1) {
    const k = random(12);
    if (k < 3) {
      const attached = random(40) === 0 ? { attachments: [{ attachment_id: 'a', name: 'x.png', mime: 'image/png', kind: 'image', size: 1, hash: 'h' }] } : null;
      all.push(row('user', `${random(2) === 0 ? '# Now\n' : ''}${'q'.repeat(random(200))}`, attached));
    } else if (k < 6) all.push(row('assistant', 'a'.repeat(random(300))));
    else if (k < 9) {
      const batch = `b${step}`;
      all.push(row('tool', '{}', { kind: 'call', call_id: `${batch}-1`, batch, arguments: { p: 1 } }, 'mcp.list'));
      all.push(row('tool', 'o'.repeat(random(3000)), { kind: 'result', call_id: `${batch}-1`, ok: true }, 'mcp.list'));
    } else if (k === 9 && all.length > 4 && random(25) === 0) all.push(row('summary', 's'.repeat(random(400)), { kind: 'summary', through_seq: all[random(all.length)].seq, summarised: 3 }));
    else if (k === 10 && random(25) === 0) all.push(row('summary', 'failed', { kind: 'compaction_failed', reason: 'x' }));
    if (random(60) === 0) for (let i = 0; i < all.length; i += 1) all[i] = { ...all[i] };
    const rows = all.slice(Math.max(0, all.length - (random(4) === 0 ? 15 : 60)));
    if (rows.length === 0) continue;
    const total = messagesTokens(transcriptOf(rows));
    const budget = Math.max(0, total + random(3) - 1 - (random(5) === 0 ? random(3000) : 0));
    const served = views.request(rows, SYSTEM, NOTE, shaping, budget);
    if (served === undefined) {
      decisions.declined += 1;
      continue;
    }
    decisions.served += 1;
    const long = await compactor.modelView(rows, [SYSTEM], { conversationId: 'c', provider: {} as never, model: 'm', budget: { window: 0, reply: 0, fixed: 0, history: budget } }, false);
    assert.deepEqual(served, requestMessages(long.messages, NOTE, NAMES), `step ${step}`);
  }
  assert.ok(decisions.served > 300 && decisions.declined > 300, JSON.stringify(decisions));
});
