// The page's style sheets and its browser targets (tsconfig.page.json, docs/design.md: Safari 16.0,
// Chrome 110, Firefox ESR 115): Firefox ESR 115 drops a whole rule whose selector holds `:has()`, so a
// small-phone rule written that way silently does nothing there. The page keys such rules on classes.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

const MEDIA = join(__dirname, '..', '..', 'media');

/** `:has(` in a sheet's rules, its comments left out: each hit as "file:line". */
function hasSelectors(file: string, css: string): string[] {
  const rules = css.replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' '));
  return rules.split('\n').flatMap((line, i) => (/:has\(/i.test(line) ? [`${file}:${i + 1}`] : []));
}

test('no style sheet of the page uses :has() (Firefox ESR 115 drops the rule)', async () => {
  const sheets = (await readdir(MEDIA)).filter((name) => name.endsWith('.css'));
  assert.ok(sheets.length > 0, 'the page has style sheets');
  const hits = [];
  for (const name of sheets) hits.push(...hasSelectors(name, await readFile(join(MEDIA, name), 'utf8')));
  assert.deepEqual(hits, []);
});

test('the check finds :has() in a rule and not in a comment', () => {
  assert.deepEqual(hasSelectors('x.css', '/* .a:has(.b) */\n.c { color: red; }\n.d:HAS(.e) .f { display: none; }'), ['x.css:3']);
});
