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
 * `text` as well-formed UTF-16: each lone surrogate (a JSON "\ud800" from a client, a model's answer cut
 * inside a pair) becomes U+FFFD, as the UTF-8 of SQLite's bindings (sql.js, history.db) cannot hold it and
 * would read it back changed (three U+FFFD from sql.js, one from history.db). The text itself when it is
 * well-formed already (one scan, no copy).
 */
export function wellFormed(text: string): string {
  return text.isWellFormed() ? text : text.toWellFormed();
}
