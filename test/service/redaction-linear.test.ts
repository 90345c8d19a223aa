// Attack: text made to make the redactor's patterns scan to the end of a long run from each position of
// it (quadratic: 40 KB of letters took 4.7 s, blocking the event loop; agent24 found it). Every log
// line's fields and every provider's error text go through these patterns. The inputs are 400 KB: a
// quadratic pattern takes minutes on them, the test's timeout (not a threshold: linear ones take well
// under a second) fails it. The second test holds what the patterns still find.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REDACTED, Redactor, redactText, redactVendorText } from '../../src/log/redact';

const N = 400_000;
const run = (unit: string, prefix = '') => prefix + unit.repeat(Math.ceil(N / unit.length));
const ADVERSARIAL: Record<string, string> = {
  letters: run('a'),
  digitsThenLetter: run('1111111a'),
  letterDigit: run('a1'),
  dashed: run('a-'),
  dotted: run('a.'),
  queryName: run('a', '?'),
  queryKeywords: run('token', '?'),
  queries: run('?a'),
  jsonKey: run('a', '"'),
  jsonKeywords: run('token', '"'),
  stars: run('ab*'),
  ellipses: run('ab..'),
  vendorPrefixes: run('sk-'),
  dashesThenWord: run('-', '') + 'a1'.repeat(20),
};

test('attack: the redactor is linear on texts made to backtrack (log fields, provider errors)', { timeout: 60_000 }, () => {
  const redactor = new Redactor(['a-configured-secret-value']);
  for (const [name, text] of Object.entries(ADVERSARIAL)) {
    assert.equal(typeof redactText(text, ['another-secret-value']), 'string', name);
    assert.equal(typeof redactVendorText(text, { own: ['sk-own-key-123456'], known: ['another-secret-value'] }), 'string', name);
    assert.equal(typeof redactor.redactFields({ field: text }).field, 'string', name);
  }
});

test('the patterns still find what they found: URL passwords, token parameters, JSON secrets, masked and long keys', () => {
  const cases: [string, string][] = [
    ['see https://user:hunter2@example.com/x', `see https://${REDACTED}@example.com/x`],
    ['see 1abc+x://user:pw@host', `see 1abc+x://${REDACTED}@host`],
    ['GET /a?x=1&api_key=abcdef&y=2', `GET /a?x=1&api_key=${REDACTED}&y=2`],
    ['GET /a??token=abcdef', `GET /a??token=${REDACTED}`],
    ['body {"user":"x","access_token":"abc\\"def"}', `body {"user":"x","access_token":"${REDACTED}"}`],
  ];
  for (const [text, expected] of cases) assert.equal(redactText(text, []), expected, text);
  const vendor: [string, string][] = [
    ['Incorrect API key provided: sk-abc***wxyz here', `Incorrect API key provided: ${REDACTED} here`],
    ['masks abc***def***ghi end', `masks ${REDACTED}${REDACTED} end`],
    ['key abcd...wxyz here', `key ${REDACTED} here`],
    ['key abcd\u2026wxyz here', `key ${REDACTED} here`],
    ['opaque 0123456789abcdef0123456789abcdef01 here', `opaque ${REDACTED} here`],
    ['opaque --0123456789abcdef0123456789abcdef01 here', `opaque --${REDACTED} here`],
  ];
  for (const [text, expected] of vendor) assert.equal(redactVendorText(text), expected, text);
});
