import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { firstCodePoints } from '../../src/protocol/code-points';
import { PREVIEW_CHARS } from '../../src/protocol/conversations';
import { previewOf } from '../../src/protocol/preview';
import { cutText } from '../../src/store/history/protocol';

/**
 * What previewOf was before it went line by line: the whole text split, the line spread into characters;
 * well-formed (a lone surrogate as U+FFFD, as the stored message it previews: fix21a).
 */
function splitPreview(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? '';
  return [...line.trim()].slice(0, PREVIEW_CHARS).join('').toWellFormed();
}

const PAIR = '\u{1F600}';
const HIGH = '\ud83d';
const LOW = '\ude00';

const TEXTS = [
  '',
  'bench turn',
  '\n\n  \n',
  '\n \t\r\n  second line  \nthird',
  '\u00a0\u2028\n\u3000 words \u3000\nmore',
  'a'.repeat(PREVIEW_CHARS),
  'a'.repeat(PREVIEW_CHARS + 1),
  `${'b'.repeat(PREVIEW_CHARS - 1)}${PAIR}tail`,
  `${'b'.repeat(PREVIEW_CHARS - 1)}${HIGH}tail`,
  `${LOW}${'c'.repeat(PREVIEW_CHARS)}`,
  PAIR.repeat(PREVIEW_CHARS + 5),
  `${HIGH}${HIGH}${LOW}${LOW}`.repeat(60),
  `   \n${'x '.repeat(400)}\n${'y'.repeat(10_000)}`,
  `line\r\nnext`,
];

describe('previewOf', () => {
  test('gives what splitting the whole text gave, for every kind of line and character', () => {
    for (const text of TEXTS) assert.equal(previewOf(text), splitPreview(text), JSON.stringify(text.slice(0, 40)));
  });

  test('firstCodePoints counts as [...text] does; cutText keeps that many', () => {
    for (const text of TEXTS) {
      for (const n of [0, 1, 2, 3, PREVIEW_CHARS - 1, PREVIEW_CHARS, 500]) {
        const expected = [...text].slice(0, n).join('');
        assert.equal(firstCodePoints(text, n), expected);
        assert.equal(cutText(text, n, '[cut]'), `${expected}[cut]`);
      }
    }
  });
});
