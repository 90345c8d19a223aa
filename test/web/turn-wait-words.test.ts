// The wait before a provider's retry, in words (turn-notices.ts): counted down, then "retrying now" while
// the next attempt runs (review24e: it stayed at "retrying in 1 s" until the answer came).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitWords } from '../../src/web/chat/turn-notices';

test('a wait counts down, then says the retry is under way', () => {
  assert.equal(waitWords('rate_limited', 3), 'Rate limited; retrying in 3 s');
  assert.equal(waitWords('rate_limited', 1), 'Rate limited; retrying in 1 s');
  assert.equal(waitWords('rate_limited', 0), 'Rate limited; retrying now');
  assert.equal(waitWords('unavailable', 0), 'The model provider is busy; retrying now');
});
