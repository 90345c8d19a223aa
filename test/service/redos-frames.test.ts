// Attack (review24d): a relay or a paired client sends a box frame whose text is a long run of '='
// (decoded before it is authenticated), or a provider answers an error with a long run of '<'. Both
// patterns scanned to the end from each position: 200 KB took 17-39 s. 400 KB here blocks the thread for
// minutes on such a pattern, so the runner's per-file timeout fails it (not a threshold: linear ones take
// milliseconds). Checked: on 92950f4's patterns the file did not finish in 200 s.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromBase64url } from '../../src/tunnel/base64url';
import { explanationOf } from '../../src/agent/providers/http-provider';

test('attack: base64url of a long run of = is refused at once', { timeout: 30_000 }, () => {
  assert.equal(fromBase64url(`${'='.repeat(400_000)}x`), undefined);
  assert.deepEqual(fromBase64url('AQI='), new Uint8Array([1, 2]));
  assert.deepEqual(fromBase64url('AQI'), new Uint8Array([1, 2]));
});

test("attack: a provider's error answer of a long run of '<' is read at once", { timeout: 30_000 }, () => {
  assert.equal(explanationOf(undefined, `500 ${'<'.repeat(400_000)}x`).length, 400_001);
  assert.equal(explanationOf(undefined, '502 <html><b>Bad gateway</b></html>'), '  Bad gateway  ');
});
