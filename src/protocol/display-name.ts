import { z } from 'zod';

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
 * without bidi controls or control characters. No imports beyond zod: the web page bundles it too.
 */
export function displayName(text: string): string {
  let out = '';
  for (const char of text) if (!isHidden(char.codePointAt(0)!)) out += char;
  return out;
}

/**
 * A name field of a command, cleaned at the edge (displayName, then trimmed) and then checked: a name
 * made only of hidden characters is empty, and refused as such.
 */
export function displayNameField(field: string, max: number) {
  return z
    .string({ error: `${field} must be a string` })
    .transform((value) => displayName(value).trim())
    .pipe(
      z
        .string()
        .min(1, { error: `${field} must not be empty` })
        .max(max, { error: `${field} must be at most ${max} characters` }),
    );
}
