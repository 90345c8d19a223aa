// Cuts of outside text (a budget in UTF-16 units, a name in characters) never keep half a surrogate pair (s22, fix22a).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstCodePoints, firstUnits, firstUtf8Bytes, shortened } from '../../src/protocol/code-points';
import { describeArguments } from '../../src/agent/tools/preview';

const PAIR = '\u{1F600}';

test('firstUnits: at most that many units, one fewer rather than half a pair', () => {
  assert.equal(firstUnits(`ab${PAIR}c`, 3), 'ab');
  assert.equal(firstUnits(`ab${PAIR}c`, 4), `ab${PAIR}`);
  assert.equal(firstUnits(`ab${PAIR}c`, 2), 'ab');
  assert.equal(firstUnits(`ab${PAIR}`, 9), `ab${PAIR}`);
  assert.equal(firstUnits(PAIR, 1), '');
  assert.equal(firstUnits('abc', 0), '');
  // A lone surrogate is not the cut's to mend: kept as it is (the store makes it well-formed).
  assert.equal(firstUnits('a\ud800b', 2), 'a\ud800');
  assert.equal(firstUnits('a\udc00\ud800b', 2), 'a\udc00');
});

test('shortened: at most that many characters with the ellipsis, counted as code points', () => {
  assert.equal(shortened('abc', 3), 'abc');
  assert.equal(shortened('abcd', 3), 'ab\u2026');
  assert.equal(shortened(PAIR.repeat(3), 3), PAIR.repeat(3), 'three characters: not cut, though six units');
  assert.equal(shortened(PAIR.repeat(4), 3), `${PAIR.repeat(2)}\u2026`);
  assert.equal(firstCodePoints(`a${PAIR}b`, 2), `a${PAIR}`);
});

test("a permission prompt's argument cut at 300 units keeps whole characters", () => {
  const line = describeArguments({ text: `${'x'.repeat(299)}${PAIR}${'y'.repeat(10)}` });
  assert.ok(line.isWellFormed(), JSON.stringify(line.slice(290)));
  assert.equal(line, `text: ${'x'.repeat(299)}… (311 characters)`);
});

test('firstUtf8Bytes: the longest start of whole code points within the bytes, on 5,000 seeded strings (s23, polish23)', () => {
  const pieces = ['a', 'é', '中', PAIR, '\ud800', '\udc00'];
  let seed = 23;
  const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  for (let run = 0; run < 5_000; run++) {
    let text = '';
    for (let i = next(60); i > 0; i--) text += pieces[next(pieces.length)];
    const limit = next(130);
    const cut = firstUtf8Bytes(text, limit);
    assert.ok(text.startsWith(cut), JSON.stringify(text));
    assert.ok(Buffer.byteLength(cut) <= limit, JSON.stringify({ text, limit }));
    if (cut.length < text.length) {
      const following = String.fromCodePoint(text.codePointAt(cut.length)!);
      assert.ok(Buffer.byteLength(cut + following) > limit, `stopped early: ${JSON.stringify({ text, limit })}`);
      assert.ok(firstUnits(text, cut.length) === cut, 'never half a pair');
    }
  }
});
