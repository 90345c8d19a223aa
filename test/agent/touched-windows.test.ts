// The touched paths of a conversation's window of rows are kept from its last step (agent/prompt/turn-context.ts
// TouchedWindows): each way a window changes (rows appended, rows let go at its front, the rows read anew,
// another conversation in between) gives the system message a context made afresh gives.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MAX_TOUCHED_WINDOWS, TouchedWindows, touchedPaths, TurnContext } from '../../src/agent/prompt/turn-context';
import type { ServiceConfig } from '../../src/protocol';
import type { MessageRow } from '../../src/store';
import { tempDir } from '../helpers/temp';

let seq = 0;
function row(conversation: string, role: MessageRow['role'], path?: string, at = (seq += 1)): MessageRow {
  const data = role === 'tool' ? { kind: 'call', call_id: `c${at}`, batch: 'b', arguments: { path } } : role === 'user' && path ? { context: [{ kind: 'file', path, text: 'x' }] } : null;
  return {
    seq: at,
    id: `m${at}`,
    conversation_id: conversation,
    role,
    content: 'text',
    timestamp: '2026-11-27T00:00:00.000Z',
    tool_name: role === 'tool' ? 'read_file' : null,
    user_id: null,
    data,
    client_key: null,
  };
}

test('a kept window gives the touched paths a whole scan gives, however it changed', () => {
  const windows = new TouchedWindows();
  const same = (rows: MessageRow[]) => {
    const { touched, key } = windows.of(rows);
    const whole = [...new Set(touchedPaths(rows))];
    assert.deepEqual(touched, whole);
    assert.equal(key, whole.join('\n'));
    return touched;
  };
  const history = [row('a', 'user'), row('a', 'tool', 'one/x.ts'), row('a', 'assistant'), row('a', 'user', 'two/y.ts')];
  assert.deepEqual(same(history), ['one/x.ts', 'two/y.ts']);
  // Appended: the new rows' paths count (the scan of the rows after the last one seen).
  history.push(row('a', 'tool', 'three/z.ts'), row('a', 'assistant'));
  assert.deepEqual(same(history), ['one/x.ts', 'two/y.ts', 'three/z.ts']);
  // Let go at the front (the history cache's bound): the paths of the rows gone no longer count.
  assert.deepEqual(same(history.slice(2)), ['two/y.ts', 'three/z.ts']);
  // Longer at the front again (the same rows): theirs count again.
  assert.deepEqual(same(history), ['one/x.ts', 'two/y.ts', 'three/z.ts']);
  assert.deepEqual(same(history.slice(2)), ['two/y.ts', 'three/z.ts']);
  // Another conversation's window in between keeps its own.
  assert.deepEqual(same([row('b', 'tool', 'other/w.ts')]), ['other/w.ts']);
  assert.deepEqual(same(history.slice(2)), ['two/y.ts', 'three/z.ts']);
  // Read anew (a retention cut, an undone turn): the same seqs, new rows, other paths.
  const reread = history.slice(2).map((old) => row('a', old.role, old.role === 'tool' ? 'four/v.ts' : undefined, old.seq));
  assert.deepEqual(same(reread), ['four/v.ts']);
  // Nothing new: the same answer.
  assert.deepEqual(same(reread), ['four/v.ts']);
  assert.deepEqual(same([]), []);
});

test('the system message of a kept window is the one a new context makes', async (t) => {
  const { dir, cleanup } = await tempDir('touched-windows-');
  t.after(cleanup);
  for (const folder of ['one', 'two']) {
    await mkdir(join(dir, folder));
    await writeFile(join(dir, folder, 'AGENTS.md'), `rules of ${folder}\n`);
  }
  const kept = new TurnContext(() => [dir], undefined);
  t.after(() => kept.close());
  const config = { system_prompt_mode: 'add' } as ServiceConfig;
  const workplace = { model: 'm', contextWindow: null };
  const said = async (rows: MessageRow[]) => {
    const fresh = new TurnContext(() => [dir], undefined);
    try {
      const content = (await kept.systemMessage(config, rows, workplace, {}, [dir])).content;
      assert.equal(content, (await fresh.systemMessage(config, rows, workplace, {}, [dir])).content);
      return content;
    } finally {
      fresh.close();
    }
  };
  const history = [row('c', 'user'), row('c', 'tool', 'one/a.ts'), row('c', 'assistant')];
  assert.match(await said(history), /rules of one/);
  history.push(row('c', 'user'), row('c', 'tool', 'two/b.ts'));
  const both = await said(history);
  assert.ok(both.includes('rules of one') && both.includes('rules of two'));
  const later = await said(history.slice(3));
  assert.ok(!later.includes('rules of one') && later.includes('rules of two'));
});

/** A full, synchronous garbage collection (the flag set at run time, `gc` taken from a fresh context). */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

test('a kept window holds no row: a conversation the history cache let go (or deleted) is not kept alive by its touched paths (review18b)', async () => {
  const windows = new TouchedWindows();
  // A row as big as a chat frame may make; once nothing else holds it, neither may the kept window.
  const held = (() => {
    const rows = [row('big', 'user', 'one/x.ts', 1_000_001), { ...row('big', 'assistant', undefined, 1_000_002), content: 'x'.repeat(1_000_000) }];
    windows.of(rows);
    return new WeakRef(rows[1]);
  })();
  // WeakRefs keep their target until the job that made them ends.
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  assert.equal(held.deref(), undefined);
  // Its conversation read anew (same seqs, other paths): scanned whole, nothing of the kept answer served.
  const reread = [row('big', 'user', 'three/z.ts', 1_000_001), row('big', 'tool', 'four/w.ts', 1_000_002)];
  assert.deepEqual(windows.of(reread).touched, ['three/z.ts', 'four/w.ts']);
});

test('at most MAX_TOUCHED_WINDOWS conversations are kept, the least recently asked let go first', () => {
  const windows = new TouchedWindows();
  for (let c = 0; c <= MAX_TOUCHED_WINDOWS; c++) windows.of([row(`c${c}`, 'user', `p${c}/x.ts`)]);
  assert.equal(windows.size, MAX_TOUCHED_WINDOWS);
  assert.equal(windows.holds('c0'), false);
  assert.equal(windows.holds(`c${MAX_TOUCHED_WINDOWS}`), true);
});
