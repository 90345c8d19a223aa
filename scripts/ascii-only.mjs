// An esbuild plugin: every Node bundle in ASCII (esbuild.mjs). esbuild escapes what is not ASCII in
// strings, names and most regular expressions (its default `charset`) but keeps comments as written, and
// a few dashes in comments made the whole of cli-main.js (2 MB), read at each start (src/cli-loader.ts,
// readBundle), a two-byte string in V8 rather than a one-byte one. What is left is escaped as `\uXXXX`,
// which is inert in a comment. esbuild also leaves a raw template's text (`String.raw`, any tagged
// template) and a regular expression literal's as written, where an escape would change the value (a
// RegExp's `source`, the raw string): such a character fails the build instead (review23b).
import { readFileSync, writeFileSync } from 'node:fs';
import { transform } from 'esbuild';

const OTHER = /[^\x00-\x7f]/g;

/** The text with what is not ASCII escaped; throws if some of it is outside a comment. */
export async function asciiText(text, file) {
  if (!/[^\x00-\x7f]/.test(text)) return text;
  // The code without any comment, every string and name escaped: what is not ASCII there is code.
  const { code } = await transform(text, { minify: true, legalComments: 'none', charset: 'ascii', loader: 'js' });
  const found = /[^\x00-\x7f]/.exec(code);
  if (found) {
    const around = code.slice(Math.max(0, found.index - 40), found.index + 10);
    throw new Error(`${file}: a character other than ASCII outside a comment that an escape would change (a raw template or a regular expression): ${JSON.stringify(around)}`);
  }
  return text.replace(OTHER, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export const asciiOnly = {
  name: 'ascii-only',
  setup(b) {
    b.initialOptions.metafile = true;
    b.onEnd(async (result) => {
      for (const file of Object.keys(result.metafile?.outputs ?? {}).filter((f) => f.endsWith('.js'))) {
        const text = readFileSync(file, 'utf8');
        const ascii = await asciiText(text, file);
        if (ascii !== text) writeFileSync(file, ascii);
      }
    });
  },
};
