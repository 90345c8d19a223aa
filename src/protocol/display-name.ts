import { wellFormed } from './code-points';

/**
 * Characters that change how the text around them is shown without being seen: bidi embeddings and
 * overrides (U+202A-202E), isolates (U+2066-2069), marks (U+200E, U+200F, U+061C), line and paragraph
 * separators (U+2028, U+2029), and C0/C1 controls. A right-to-left override shows `gnp<U+202E>exe.png`
 * as `gnpgnp.exe`: an executable named to look like a picture.
 */
function isHidden(code: number): boolean {
  return (
    code <= 0x1f ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x061c ||
    code === 0x200e ||
    code === 0x200f ||
    code === 0x2028 ||
    code === 0x2029 ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

/**
 * A name as a person is shown it (an attachment's, a device's, a machine's, a conversation's title):
 * without bidi controls or control characters, and well-formed (a lone surrogate as U+FFFD, as the store's
 * UTF-8 reads it back: code-points.ts wellFormed). No imports but code-points.ts (none of its own): the
 * web page bundles it too (the zod field that uses it is display-name-field.ts, so the page's bundle holds no zod).
 */
export function displayName(text: string): string {
  let out = '';
  for (const char of text) if (!isHidden(char.codePointAt(0)!)) out += char;
  return wellFormed(out);
}

/**
 * Characters that show as nothing at all, beside the hidden ones: zero-width spaces, joiners and
 * non-joiners, the word joiner and invisible operators, the soft hyphen, the byte order mark, filler
 * characters, variation selectors and tag characters. Kept in names (a joiner makes an emoji, a
 * non-joiner Persian words), but a text that differs from another only by them reads the same.
 */
const INVISIBLE = /[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200d\u2060-\u2064\u206a-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\u{e0000}-\u{e0fff}]/gu;

/**
 * How a text reads, to tell look-alikes apart (never to show): hidden and invisible characters gone, and
 * compatibility forms folded (NFKC: a full-width `＃` is `#`, a no-break or wide space a space).
 */
export function readsAs(text: string): string {
  return displayName(text).replace(INVISIBLE, '').normalize('NFKC');
}

const SHORT_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A name that must stay exact (a file's path, for the model to open it) shown where a line break or a
 * bidi control in it would be read as something else (a heading of the service's own note, a reversed
 * extension): as it is when it holds no hidden character, else as a JSON string with each of them
 * escaped (`"a\\nb"`), so it is one visible line and still says exactly which name.
 */
export function exactName(text: string): string {
  if (![...text].some((char) => isHidden(char.codePointAt(0)!))) return text;
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    out += char === '"' || char === '\\' ? `\\${char}` : isHidden(code) ? (SHORT_ESCAPES[char] ?? `\\u${code.toString(16).padStart(4, '0')}`) : char;
  }
  return `"${out}"`;
}
