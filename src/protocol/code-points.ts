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
