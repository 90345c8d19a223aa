/**
 * The first `count` characters of `text`, counted as code points (as `[...text]` and SQLite's `substr`
 * count them: a surrogate pair is one, a lone surrogate one), without splitting the whole text.
 */
export function firstCodePoints(text: string, count: number): string {
  // Never more code points than UTF-16 units.
  if (text.length <= count) return text;
  let end = 0;
  for (let n = 0; n < count && end < text.length; n++) end += text.codePointAt(end)! > 0xffff ? 2 : 1;
  return text.slice(0, end);
}

/**
 * `text` when it has at most `max` characters (code points), else its first `max - 1` and an ellipsis:
 * `max` in all, never half a pair. A name or a sentence shown to a person or the model.
 */
export function shortened(text: string, max: number): string {
  if (firstCodePoints(text, max).length === text.length) return text;
  return `${firstCodePoints(text, max - 1)}\u2026`;
}

/**
 * The first `units` UTF-16 units of `text`, one fewer when the cut would split a surrogate pair: for a
 * budget counted in units (`.length`: a tool's output, a diff, a line), never half a character, which the
 * store would read back as U+FFFD and a provider's JSON parser may refuse.
 */
export function firstUnits(text: string, units: number): string {
  if (text.length <= units) return text;
  if (units <= 0) return '';
  const last = text.charCodeAt(units - 1);
  const next = text.charCodeAt(units);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? units - 1 : units);
}

/**
 * The longest start of `text` whose UTF-8 takes at most `bytes` bytes, cut between code points (never half
 * a pair): for a limit counted in bytes on the wire (a WebSocket close reason's 123). A lone surrogate
 * counts 3 bytes, as encoders write it as U+FFFD.
 */
export function firstUtf8Bytes(text: string, bytes: number): string {
  // Every UTF-16 unit takes at most 3 bytes (a pair, two units, takes 4).
  if (text.length * 3 <= bytes) return text;
  let used = 0;
  let end = 0;
  while (end < text.length) {
    const point = text.codePointAt(end)!;
    const size = point < 0x80 ? 1 : point < 0x800 ? 2 : point <= 0xffff ? 3 : 4;
    if (used + size > bytes) break;
    used += size;
    end += size === 4 ? 2 : 1;
  }
  return end === text.length ? text : text.slice(0, end);
}

/**
 * firstUnits(text, units) and how many UTF-16 units it left out (one more than `text.length - units` when
 * the cut fell inside a pair): the count an "N more characters left out" note gives, so the head and the
 * count always add up to the whole text.
 */
export function unitsCut(text: string, units: number): { head: string; leftOut: number } {
  const head = firstUnits(text, units);
  return { head, leftOut: text.length - head.length };
}

/** String.prototype's own (ES2024: Chrome 111, Safari 16.4, Firefox 119), when the runtime has them. */
type WellFormedBuiltIns = { isWellFormed?: (this: string) => boolean; toWellFormed?: (this: string) => string };

/**
 * `text` as well-formed UTF-16: each lone surrogate (a JSON "\ud800" from a client, a model's answer cut
 * inside a pair) becomes U+FFFD, as the UTF-8 of SQLite's bindings (sql.js, history.db) cannot hold it and
 * would read it back changed (three U+FFFD from sql.js, one from history.db). The text itself when it is
 * well-formed already (one scan, no copy). The phone page's bundle targets Chrome 110 and Safari 16.0, which
 * lack `isWellFormed` / `toWellFormed`: they are used when present (looked up at each call), else a loop.
 */
export function wellFormed(text: string): string {
  const own = String.prototype as WellFormedBuiltIns;
  if (own.isWellFormed && own.toWellFormed) return own.isWellFormed.call(text) ? text : own.toWellFormed.call(text);
  return wellFormedLoop(text);
}

/** Whether `text` holds no lone surrogate (`String.prototype.isWellFormed`, or the loop where it is missing). */
export function isWellFormed(text: string): boolean {
  const own = String.prototype as WellFormedBuiltIns;
  return own.isWellFormed ? own.isWellFormed.call(text) : loneSurrogateAt(text, 0) < 0;
}

/** wellFormed without the built-ins: the index of the first lone surrogate, then a copy that replaces each. */
export function wellFormedLoop(text: string): string {
  const first = loneSurrogateAt(text, 0);
  if (first < 0) return text;
  let out = '';
  let from = 0;
  for (let at = first; at >= 0; at = loneSurrogateAt(text, from)) {
    out += `${text.slice(from, at)}\ufffd`;
    from = at + 1;
  }
  return out + text.slice(from);
}

/** The index of the first lone surrogate in `text` at or after `from`, or -1. */
function loneSurrogateAt(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdfff) continue;
    if (unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
    }
    return i;
  }
  return -1;
}
