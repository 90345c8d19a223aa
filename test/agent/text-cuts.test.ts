// Cuts of outside text (a budget in UTF-16 units, a name in characters) never keep half a surrogate pair (s22, fix22a).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstCodePoints, firstUnits, shortened } from '../../src/protocol/code-points';
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
