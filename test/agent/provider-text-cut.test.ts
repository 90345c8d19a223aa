// A provider's error text cut for a client or the log: never half a pair, and a JSON "\ud800" escape not kept as a lone surrogate (review22a).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cleanCause, safeDetail } from '../../src/agent/providers/redact';

test("a provider's error text cut for a client or the log stays well-formed", () => {
  const said = `${'x'.repeat(158)}\u{1F600} and more words after it`;
  assert.equal(cleanCause(said), `${'x'.repeat(158)}\u{1F600}\u2026`);
  assert.equal(safeDetail(said, {}, 160), `${'x'.repeat(158)}\u{1F600}\u2026`);
  assert.equal(safeDetail(`${'x'.repeat(157)}\u{1F600}\u{1F600}`, {}, 159), `${'x'.repeat(157)}\u{1F600}\u{1F600}`, 'not cut: 159 characters');
});

test("a provider's JSON error message with an escaped lone surrogate is not kept as one", () => {
  const body = JSON.parse('{"error":{"message":"bad input \\ud800 here"}}') as { error: { message: string } };
  assert.equal(cleanCause(body.error.message), 'bad input \ufffd here');
});
