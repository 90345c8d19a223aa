import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CappedOutput } from '../../src/git/capped-output';

const fed = (cap: number, ...chunks: string[]) => {
  const out = new CappedOutput(cap);
  for (const chunk of chunks) out.add(Buffer.from(chunk));
  return out;
};

test('held whole under the cap; cut at the cap past it, and what comes after is dropped', () => {
  const whole = fed(100, 'ab', 'cd');
  assert.deepEqual([whole.text(), whole.overflowed], ['abcd', false]);
  const cut = new CappedOutput(5);
  assert.equal(cut.add(Buffer.from('abc')), true);
  assert.equal(cut.add(Buffer.from('defg')), false);
  assert.equal(cut.add(Buffer.from('h')), false);
  assert.deepEqual([cut.text(), cut.overflowed], ['abcde', true]);
});

test('textBefore: up to the newline before the last marker, found inside a chunk or across two, or nothing', () => {
  const file = (name: string) => `diff --git a/${name} b/${name}\n+${name}\n`;
  const text = file('one') + file('two') + file('three');
  const last = text.lastIndexOf('\ndiff --git ') + 1;
  // Every split into two chunks, so the marker falls across the seam at every offset.
  for (let at = 1; at < text.length; at++) assert.equal(fed(1000, text.slice(0, at), text.slice(at)).textBefore('diff --git '), text.slice(0, last), `split at ${at}`);
  // Byte by byte.
  assert.equal(fed(1000, ...text).textBefore('diff --git '), text.slice(0, last));
  assert.equal(fed(1000, file('only')).textBefore('diff --git '), '', 'the first file is no whole file before a cut');
  assert.equal(fed(1000, 'x'.repeat(50)).textBefore('diff --git '), '');
});

test('textBefore: a marker far from the end is found through several search windows, whatever the chunk sizes', () => {
  const head = 'diff --git a/a b/a\n+a\n';
  const big = `diff --git a/big b/big\n${'+x\n'.repeat(1_500_000)}`;
  const bytes = Buffer.from(head + big);
  for (const size of [65_536, 4097, 7]) {
    const out = new CappedOutput(bytes.length);
    for (let i = 0; i < bytes.length; i += size) out.add(bytes.subarray(i, i + size));
    assert.equal(out.textBefore('diff --git '), head, `chunks of ${size}`);
  }
});

test('multi-byte characters kept before the cut decode whole', () => {
  const text = 'diff --git a/é b/é\n+héllo ✓\ndiff --git a/z b/z\n+z';
  const bytes = Buffer.from(text);
  const out = new CappedOutput(1000);
  for (let i = 0; i < bytes.length; i += 3) out.add(bytes.subarray(i, i + 3));
  assert.equal(out.textBefore('diff --git '), 'diff --git a/é b/é\n+héllo ✓\n');
});
