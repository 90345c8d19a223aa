// What every start parses: dist/extension.js (the editor loads it whole before activate()) and
// dist/cli-main.js (the command line's bundle, which dist/cli.js runs: src/cli-loader.ts) hold zod's
// English messages only, not its 40-odd other languages (esbuild.mjs, zodEnglishOnly). Reads the build
// of `npm run build`, as the CLI tests do.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

const DIST = join(__dirname, '..', '..', 'dist');

for (const bundle of ['extension.js', 'cli-main.js']) {
  test(`${bundle} holds zod's English messages and none of its other languages`, async () => {
    const text = await readFile(join(DIST, bundle), 'utf8');
    assert.ok(text.includes('Invalid input: expected '), "the English messages (zod's default) are in");
    // Spanish and German messages (node_modules/zod/v4/locales/es.js, de.js); ASCII, as the bundle escapes the rest.
    assert.ok(!text.includes('Entrada inv'), 'the Spanish messages are in');
    assert.ok(!text.includes('Zu klein: erwartet'), 'the German messages are in');
  });
}

// The pairing QR code's library is required from dist/sdk/ when Connection Info or `pair` draws one
// (esbuild.mjs's SPLIT), not parsed at every start: 56 KB of extension.js.
for (const bundle of ['extension.js', 'cli-main.js']) {
  test(`${bundle} requires the QR code library from dist/sdk/ rather than holding it`, async () => {
    const text = await readFile(join(DIST, bundle), 'utf8');
    assert.ok(text.includes('./sdk/qrcode.js'), 'the QR code library is required from dist/sdk/');
    assert.ok(!text.includes('Invalid hex color: '), "the QR code library's own code is in the bundle");
    const split = await readFile(join(DIST, 'sdk', 'qrcode.js'), 'utf8');
    assert.ok(split.includes('Invalid hex color: '), 'dist/sdk/qrcode.js holds the library');
  });
}

// What the service thread's bundle requires when it loads, before it listens (src/platform/builtins.ts,
// src/tunnel/noble.ts: issue 25, "editor activation"): loaded in a fresh worker as thread-loader.ts runs it,
// Node's builtins that only a git, a tool's process, an MCP server or a push use are not among them.
test("the service thread's bundle loads without child_process, dns or readline (required at their first use)", async () => {
  const { Worker } = await import('node:worker_threads');
  // Every require of a builtin goes through Module._load: recorded while the bundle loads.
  const script = `
    const { parentPort } = require('node:worker_threads');
    const Module = require('node:module');
    const load = Module._load;
    const asked = new Set();
    Module._load = function (request, ...rest) {
      const name = request.replace(/^node:/, '');
      if (Module.builtinModules.includes(name)) asked.add(name);
      return load.call(this, request, ...rest);
    };
    // As thread-loader.ts runs it (CodeCache.run): the bundle is a function of a module's arguments.
    const file = ${JSON.stringify(join(DIST, 'service-thread-main.js'))};
    const mod = { exports: {} };
    const run = new (require('node:vm').Script)(require('node:fs').readFileSync(file, 'utf8'), { filename: file }).runInThisContext();
    run.call(mod.exports, mod.exports, Module.createRequire(file), mod, file, require('node:path').dirname(file));
    parentPort.postMessage([...asked]);`;
  const worker = new Worker(script, { eval: true });
  const loaded = await new Promise<string[]>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.ok(loaded.includes('http'), `the probe sees what the bundle loads: ${loaded.join(', ')}`);
  for (const name of ['child_process', 'dns', 'readline']) assert.ok(!loaded.includes(name), `${name} is loaded with the bundle: ${loaded.join(', ')}`);
});
