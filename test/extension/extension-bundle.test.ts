// What every start parses: dist/extension.js (the editor loads it whole before activate()) and dist/cli.js
// hold zod's English messages only, not its 40-odd other languages (esbuild.mjs, zodEnglishOnly). Reads
// the build of `npm run build`, as the CLI tests do.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

const DIST = join(__dirname, '..', '..', 'dist');

for (const bundle of ['extension.js', 'cli.js']) {
  test(`${bundle} holds zod's English messages and none of its other languages`, async () => {
    const text = await readFile(join(DIST, bundle), 'utf8');
    assert.ok(text.includes('Invalid input: expected '), "the English messages (zod's default) are in");
    // Spanish and German messages (node_modules/zod/v4/locales/es.js, de.js); ASCII, as the bundle escapes the rest.
    assert.ok(!text.includes('Entrada inv'), 'the Spanish messages are in');
    assert.ok(!text.includes('Zu klein: erwartet'), 'the German messages are in');
  });
}
