// isoTime(ms) is new Date(ms).toISOString(), with the minute's text kept: the same string for every
// millisecond, whichever minute was asked before (a minute left and come back to, far years, before 1970).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isoTime } from '../../src/platform/iso-time';

test("isoTime gives toISOString's text for every millisecond, across minutes asked in any order", () => {
  const edges = [0, -1, 1, 59_999, 60_000, 60_001, 3_599_999, 3_600_000, 86_399_999, 86_400_000];
  const days = [Date.UTC(2024, 1, 29), Date.UTC(1969, 11, 31, 23, 59, 59, 999), Date.UTC(9999, 11, 31, 23, 59), Date.UTC(10000, 0, 1), Date.UTC(-1, 0, 1), Date.UTC(2026, 10, 28, 4, 47)];
  const times: number[] = [];
  for (const day of days) for (const edge of edges) times.push(day + edge);
  // Random moments, each followed by one in the same minute and one back in the first moment's minute.
  let seed = 7;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < 2_000; i++) {
    const t = Math.floor((next() - 0.5) * 2 * 8.64e15 * 0.9);
    times.push(t, t - (t % 60_000) + Math.floor(next() * 60_000), times[i % times.length]);
  }
  for (const t of times) assert.equal(isoTime(t), new Date(t).toISOString(), String(t));
  // A fraction of a millisecond is cut as a Date cuts it (toward zero), in a minute kept or not.
  for (const t of [1.5, 60_000.9, -1.5, -60_000.5, 61_000.25, 61_000.75]) assert.equal(isoTime(t), new Date(t).toISOString(), String(t));
  // Now, by default.
  const before = Date.now();
  const now = isoTime();
  assert.ok(now >= new Date(before).toISOString() && now <= new Date().toISOString());
  // What toISOString refuses, it refuses too.
  assert.throws(() => isoTime(Number.NaN), RangeError);
  assert.throws(() => isoTime(8.64e15 + 1), RangeError);
  // Also once the last valid millisecond's minute is kept (review20d): the rest of that minute is out of range.
  for (const edge of [8.64e15, -8.64e15]) {
    assert.equal(isoTime(edge), new Date(edge).toISOString());
    assert.throws(() => isoTime(edge + Math.sign(edge)), RangeError, String(edge));
    assert.throws(() => isoTime(edge + Math.sign(edge) * 59_999), RangeError, String(edge));
  }
});
