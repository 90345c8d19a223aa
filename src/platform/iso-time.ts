/**
 * `new Date(ms).toISOString()` (a message's timestamp: two a turn), with its minute's text kept: the
 * Date's field breakdown and formatting cost ~0.5 us a call on Node 20, the kept text and the seconds
 * appended ~0.1 (docs/design.md, "(s20, turn20d)"). The text of a minute is a function of the minute
 * alone: nothing to make stale, and one minute is kept (the last asked).
 */
let minute = Number.NaN;
/** `minute`'s text up to its seconds: "2026-11-28T04:47:" (or "+010000-01-01T00:00:" past year 9999). */
let prefix = '';

export function isoTime(time: number = Date.now()): string {
  // A Date's time value is whole milliseconds, cut toward zero (TimeClip).
  const ms = Math.trunc(time);
  const m = Math.floor(ms / 60_000);
  // Past the last valid millisecond (8.64e15, the first of its minute) the kept minute must not answer.
  if (m !== minute || !(Math.abs(ms) <= 8.64e15)) {
    // Throws (RangeError) what toISOString throws: NaN, beyond ±8.64e15.
    const text = new Date(ms).toISOString();
    prefix = text.slice(0, -7);
    minute = m;
    return text;
  }
  const within = ms - m * 60_000;
  const s = Math.floor(within / 1000);
  const milli = within - s * 1000;
  return `${prefix}${s < 10 ? '0' : ''}${s}.${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}
