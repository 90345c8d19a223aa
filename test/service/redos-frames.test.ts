// Attack (review24d): a relay or a paired client sends a box frame whose text is a long run of '='
// (decoded before it is authenticated), or a provider answers an error with a long run of '<'. Both
// patterns scanned to the end from each position: 200 KB took 17-39 s. 400 KB here: the test's timeout,
// not a threshold, fails a quadratic pattern; linear ones take milliseconds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromBase64url } from '../../src/tunnel/base64url';

test('attack: base64url of a long run of = is refused at once', { timeout: 30_000 }, () => {
  assert.equal(fromBase64url(`${'='.repeat(400_000)}x`), undefined);
  assert.deepEqual(fromBase64url('AQI='), new Uint8Array([1, 2]));
  assert.deepEqual(fromBase64url('AQI'), new Uint8Array([1, 2]));
});
