// The prompt card's diff reader (src/web/chat/diff-hunks.ts), fed the diffs the service's own previews
// make (src/agent/tools/unified-diff.ts): every line gets the old/new line numbers `git apply` would use.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unifiedDiff } from '../../src/agent/tools/unified-diff';
import { countLines, parseUnifiedDiff, type DiffLine } from '../../src/web/chat/diff-hunks';

const numbered = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join('');
const shape = (lines: DiffLine[]) => lines.map((l) => `${l.kind[0]} ${l.oldLine ?? '-'} ${l.newLine ?? '-'} ${l.text}`);

test('an edit in the middle of a file: one hunk, context and changes numbered on both sides', () => {
  const before = numbered(1, 20);
  const after = before.replace('line 10\n', 'line ten\nline ten and a half\n');
  const parsed = parseUnifiedDiff(unifiedDiff('src/a.txt', before, after));
  assert.equal(parsed.oldPath, 'src/a.txt');
  assert.equal(parsed.newPath, 'src/a.txt');
  assert.equal(parsed.hunks.length, 1);
  assert.equal(parsed.hunks[0].header, '@@ -7,7 +7,8 @@');
  assert.deepEqual(shape(parsed.hunks[0].lines), [
    'c 7 7 line 7',
    'c 8 8 line 8',
    'c 9 9 line 9',
    'd 10 - line 10',
    'a - 10 line ten',
    'a - 11 line ten and a half',
    'c 11 12 line 11',
    'c 12 13 line 12',
    'c 13 14 line 13',
  ]);
  assert.equal(parsed.added, 2);
  assert.equal(parsed.removed, 1);
  assert.equal(countLines(parsed), 9);
});

test('two distant edits make two hunks, the second numbered after the first shifted the new side', () => {
  const before = numbered(1, 40);
  const after = before.replace('line 3\n', 'line 3\ninserted\n').replace('line 35\n', '');
  const parsed = parseUnifiedDiff(unifiedDiff('b.txt', before, after));
  assert.equal(parsed.hunks.length, 2);
  const second = parsed.hunks[1];
  assert.equal(second.oldStart, 32);
  assert.equal(second.newStart, 33);
  const removed = second.lines.find((l) => l.kind === 'del');
  assert.deepEqual(removed, { kind: 'del', text: 'line 35', oldLine: 35 });
});

test('a new file: no old side, every line added from 1', () => {
  const parsed = parseUnifiedDiff(unifiedDiff('new.md', undefined, 'a\nb\nc\n'));
  assert.equal(parsed.oldPath, undefined);
  assert.equal(parsed.newPath, 'new.md');
  assert.equal(parsed.hunks[0].header, '@@ -0,0 +1,3 @@');
  assert.deepEqual(shape(parsed.hunks[0].lines), ['a - 1 a', 'a - 2 b', 'a - 3 c']);
});

test('emptying a file: the new side starts at 0 in the header, removed lines keep their numbers', () => {
  const parsed = parseUnifiedDiff(unifiedDiff('gone.txt', 'x\ny\n', ''));
  assert.equal(parsed.hunks[0].header, '@@ -1,2 +0,0 @@');
  assert.deepEqual(shape(parsed.hunks[0].lines), ['d 1 - x', 'd 2 - y']);
});

test('CRLF lines and a missing last newline are marked on the line, not shown as stray characters', () => {
  const parsed = parseUnifiedDiff(unifiedDiff('w.txt', 'one\r\ntwo\r\n', 'one\r\ntwo\r\nthree'));
  const lines = parsed.hunks[0].lines;
  assert.deepEqual(
    lines.map((l) => l.text),
    ['one', 'two', 'three'],
  );
  assert.deepEqual(
    lines.map((l) => l.crlf === true),
    [true, true, false],
  );
  assert.equal(lines[2].noNewline, true);
  assert.equal(lines[2].newLine, 3);
});

test('text outside any hunk (a binary file named, not diffed) is kept as a note; a cut diff ends early without error', () => {
  const named = parseUnifiedDiff('--- a/img.png\n+++ b/img.png\nBinary file img.png (2.0 KiB) is replaced by 10 B of text\n');
  assert.deepEqual(named.notes, ['Binary file img.png (2.0 KiB) is replaced by 10 B of text']);
  assert.equal(named.hunks.length, 0);
  const full = unifiedDiff('c.txt', numbered(1, 10), numbered(1, 10).replace('line 5\n', 'five\n'));
  const cut = parseUnifiedDiff(full.slice(0, full.indexOf('five') + 2));
  assert.equal(cut.hunks.length, 1);
  assert.deepEqual(shape(cut.hunks[0].lines).slice(-2), ['d 5 - line 5', 'a - 5 fi']);
});
