// The build's ASCII plugin (scripts/ascii-only.mjs, esbuild.mjs): comments escaped, and a character an
// escape would change (a raw template's, a regular expression literal's) refused rather than changed (review23b).
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { runInNewContext } from 'node:vm';
import { build } from 'esbuild';
import { tempDir } from '../helpers/temp';

interface AsciiOnly {
  asciiOnly: { name: string; setup: (b: unknown) => void };
}
/** The build's own module (plain JavaScript beside esbuild.mjs; its path in a variable, as tsc has no types for it). */
const PLUGIN = '../../scripts/ascii-only.mjs';
const plugin = async () => ((await import(PLUGIN)) as AsciiOnly).asciiOnly;

/** Bundles `source` with the plugin into a temp dir: the output's text, or the build's error. */
async function bundled(source: string): Promise<{ text?: string; error?: string }> {
  const { dir, cleanup } = await tempDir('ra-ascii-only-');
  try {
    await writeFile(join(dir, 'entry.js'), source);
    await build({ entryPoints: [join(dir, 'entry.js')], bundle: true, platform: 'node', format: 'cjs', outdir: join(dir, 'out'), logLevel: 'silent', plugins: [(await plugin()) as never] });
    return { text: await readFile(join(dir, 'out', 'entry.js'), 'utf8') };
  } catch (error) {
    return { error: String(error) };
  } finally {
    await cleanup();
  }
}

test('comments other than ASCII (a legal one kept by esbuild too) are escaped; strings keep their value', async () => {
  const { text, error } = await bundled("/*! licence — kept */\n// a dash — and an ellipsis …\nmodule.exports = ['é' + '\u{1F44B}', new RegExp('[é]').test('é')];\n");
  assert.equal(error, undefined);
  assert.doesNotMatch(text!, /[^\x00-\x7f]/, 'ASCII');
  const module = { exports: [] as unknown[] };
  runInNewContext(text!, { module, exports: module.exports });
  assert.deepEqual(Array.from(module.exports), ['é\u{1F44B}', true], 'the values as written');
});

for (const [what, source] of [
  ['a raw template', 'module.exports = String.raw`é`;\n'],
  ['a tagged template', 'const tag = (s) => s.raw[0]; module.exports = tag`— x`;\n'],
] as const) {
  test(`${what} holding a character other than ASCII fails the build (an escape would change its value)`, async () => {
    const { text, error } = await bundled(source);
    assert.equal(text, undefined, 'no bundle');
    assert.match(error ?? '', /outside a comment that an escape would change/);
  });
}

test('a regular expression literal holding a character other than ASCII fails the build (esbuild leaves it as written; an escape would change its source)', async () => {
  const { text, error } = await bundled('module.exports = /[é]/.source;\n');
  assert.equal(text, undefined, 'no bundle');
  assert.match(error ?? '', /outside a comment that an escape would change/);
});
