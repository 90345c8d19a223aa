// The turn's note tells the local time (agent/prompt/environment.ts localTime), kept for the minute:
// the next minute, a new day and another time zone each give the time as made afresh.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { localTime } from '../../src/agent/prompt/environment';

test('the local time is kept within its minute only, and for its time zone only', (t) => {
  const tz = process.env.TZ;
  t.after(() => {
    if (tz === undefined) delete process.env.TZ;
    else process.env.TZ = tz;
  });
  // Asked in this order, each after the one before (which a kept answer would serve).
  const asked: [string, string, string][] = [
    ['2026-11-26T23:58:10Z', 'UTC', 'Thursday 2026-11-26 23:58 (UTC, UTC+00:00)'],
    ['2026-11-26T23:58:59Z', 'UTC', 'Thursday 2026-11-26 23:58 (UTC, UTC+00:00)'],
    ['2026-11-26T23:59:10Z', 'UTC', 'Thursday 2026-11-26 23:59 (UTC, UTC+00:00)'],
    ['2026-11-26T23:59:50Z', 'UTC', 'Thursday 2026-11-26 23:59 (UTC, UTC+00:00)'],
    ['2026-11-27T00:00:00Z', 'UTC', 'Friday 2026-11-27 00:00 (UTC, UTC+00:00)'],
    ['2026-11-28T00:00:30Z', 'UTC', 'Saturday 2026-11-28 00:00 (UTC, UTC+00:00)'],
    ['2026-11-28T00:00:40Z', 'Asia/Calcutta', 'Saturday 2026-11-28 05:30 (Asia/Calcutta, UTC+05:30)'],
    ['2026-11-28T00:00:50Z', 'UTC', 'Saturday 2026-11-28 00:00 (UTC, UTC+00:00)'],
  ];
  for (const [at, zone, told] of asked) {
    process.env.TZ = zone;
    assert.equal(localTime(new Date(at)), told, `${at} in ${zone}`);
  }
});
