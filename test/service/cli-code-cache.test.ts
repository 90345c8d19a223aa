// dist/cli.js runs dist/cli-main.js compiled with the V8 code cache the build writes beside it
// (src/cli-loader.ts). V8 checks only a source's length against its cache, so a bundle changed after its
// cache was made must not run the cached, older code. Real files: a copy of dist's command line in a
// temp directory, run by a real node.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { copyFile, cp, mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { defaultTieringBudget } from '../../src/cli-loader';
import { CLI } from '../helpers/cli';
import { tempDir } from '../helpers/temp';

const DIST = join(CLI, '..');

function run(cli: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [cli], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
}

test('the build writes a code cache, and a bundle changed after it (same length) runs its own code, not the cached', async (t) => {
  const temp = await tempDir('ra-code-cache-');
  t.after(temp.cleanup);
  for (const name of ['cli.js', 'cli-main.js', 'cli-main.js.cache']) await copyFile(join(DIST, name), join(temp.dir, name));
  const bundle = join(temp.dir, 'cli-main.js');
  const cli = join(temp.dir, 'cli.js');

  const before = await run(cli);
  assert.equal(before.code, 2);
  assert.match(before.stderr, /^usage:\n {2}remote-assistant serve/);

  // The same length, other text, and a later modification time (as a rebuild without its cache leaves it).
  const source = await readFile(bundle, 'utf8');
  assert.ok(source.includes('usage:\n  remote-assistant serve'));
  await writeFile(bundle, source.replace('usage:\n  remote-assistant serve', 'USAGE:\n  remote-assistant serve'));
  const { mtime } = await stat(bundle);
  await utimes(bundle, mtime, new Date(mtime.getTime() + 2_000));

  const after = await run(cli);
  assert.equal(after.code, 2);
  assert.match(after.stderr, /^USAGE:\n {2}remote-assistant serve/);
});

test('a code cache damaged in place (bytes flipped, its length kept: a bad disk) is refused and the bundle compiled, never run: V8 does not check it', async (t) => {
  const temp = await tempDir('ra-code-cache-damaged-');
  t.after(temp.cleanup);
  for (const name of ['cli.js', 'cli-main.js', 'cli-main.js.cache']) await copyFile(join(DIST, name), join(temp.dir, name));
  const cache = join(temp.dir, 'cli-main.js.cache');
  const damaged = await readFile(cache);
  // Past the header, in V8's own data: one byte in every 64 of a stretch, flipped.
  for (let at = 4_096; at < Math.min(damaged.length, 200_000); at += 64) damaged[at] ^= 0xff;
  await writeFile(cache, damaged);
  const { code, stderr } = await run(join(temp.dir, 'cli.js'));
  assert.equal(code, 2, `the command line crashed on its damaged cache (exit ${code}): ${stderr.slice(0, 300)}`);
  assert.match(stderr, /^usage:\n {2}remote-assistant serve/);
});

test("a bundle rewritten while its code cache is made (npm run watch during a build) does not get the old code's cache", async (t) => {
  const temp = await tempDir('ra-code-cache-race-');
  t.after(temp.cleanup);
  const dist = join(temp.dir, 'dist');
  await cp(DIST, dist, { recursive: true, filter: (source) => !source.endsWith('.map') });
  const tmp = join(temp.dir, 'tmp');
  await mkdir(tmp);
  const bundle = join(dist, 'cli-main.js');
  const cli = join(dist, 'cli.js');
  await rm(`${bundle}.cache`);

  const writer = spawn(process.execPath, ['-e', `require(${JSON.stringify(cli)}).writeCodeCache().then(() => process.exit(0))`], {
    stdio: 'ignore',
    env: { ...process.env, TMPDIR: tmp },
  });
  const exited = new Promise<number | null>((resolve) => writer.on('exit', resolve));
  // The rehearsal's data directory exists once the bundle was read and compiled: rewrite it then.
  while (!(await readdir(tmp)).some((name) => name.startsWith('ra-rehearsal-'))) await new Promise((r) => setTimeout(r, 10));
  const source = await readFile(bundle, 'utf8');
  await writeFile(bundle, source.replace('usage:\n  remote-assistant serve', 'USAGE:\n  remote-assistant serve'));
  const { mtime } = await stat(bundle);
  await utimes(bundle, mtime, new Date(mtime.getTime() + 2_000));
  assert.equal(await exited, 0);

  const after = await run(cli);
  assert.equal(after.code, 2);
  assert.match(after.stderr, /^USAGE:\n {2}remote-assistant serve/);
});

test('a rehearsal that fails (here: no temporary directory for its data) is said and answered by writeCodeCache, so a production build can fail on it', async (t) => {
  const temp = await tempDir('ra-code-cache-fail-');
  t.after(temp.cleanup);
  const dist = join(temp.dir, 'dist');
  await cp(DIST, dist, { recursive: true, filter: (source) => !source.endsWith('.map') });
  const cli = join(dist, 'cli.js');
  const writer = spawn(process.execPath, ['-e', `require(${JSON.stringify(cli)}).writeCodeCache().then((problem) => { process.stdout.write(JSON.stringify(problem ?? null)); process.exit(0); })`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TMPDIR: join(temp.dir, 'absent') },
  });
  let stdout = '';
  let stderr = '';
  writer.stdout.on('data', (d) => (stdout += d));
  writer.stderr.on('data', (d) => (stderr += d));
  assert.equal(await new Promise<number | null>((resolve) => writer.on('exit', resolve)), 0);
  assert.match(JSON.parse(stdout) as string, /ENOENT/);
  assert.match(stderr, /rehearsal of a start was not whole .*ENOENT/);
});

/**
 * What `script` (run by `node -e`, which requires node:http last) printed as JSON, once it is seen that Node
 * took the code cache of every built-in module it loaded (NODE_DEBUG_NATIVE=CODE_CACHE says "accepted" or
 * "rejected" for each): V8 refuses them under flags other than its defaults.
 */
async function printedKeepingCodeCaches(script: string): Promise<unknown> {
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_DEBUG_NATIVE: 'CODE_CACHE' } });
  let out = '';
  let said = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (said += d));
  assert.equal(await new Promise((resolve) => child.on('exit', resolve)), 0);
  assert.match(said, /Code cache of http \(\w+\) is accepted/);
  assert.doesNotMatch(said, /is rejected/);
  return JSON.parse(out);
}

test("serve's entry compiles both SQLites ahead and leaves V8's flags as they were: Node's own modules still take their code caches", async () => {
  // In a process of its own (V8's flags are the process's). Node says whether it took each built-in
  // module's code cache (NODE_DEBUG_NATIVE=CODE_CACHE); V8 refuses them under flags other than its
  // defaults, as the entry's tiering budget was set for the process's whole life before s14.
  const script = `
    const entry = require(${JSON.stringify(CLI)});
    const compiled = entry.compileSqliteAhead?.();
    const modules = compiled ? Object.values(compiled).map((m) => m instanceof WebAssembly.Module) : [];
    require('node:http');
    process.stdout.write(JSON.stringify(modules));`;
  assert.deepEqual(await printedKeepingCodeCaches(script), [true, true]);
});

test("a missing or damaged SQLite .wasm: the entry compiles nothing ahead (undefined: each engine loads its own then) and V8's flags are set back", async (t) => {
  const temp = await tempDir('ra-sqlite-ahead-');
  t.after(temp.cleanup);
  const missing = join(temp.dir, 'missing');
  const damaged = join(temp.dir, 'damaged');
  await mkdir(missing);
  await mkdir(damaged);
  await copyFile(join(DIST, 'node-sqlite3-wasm.wasm'), join(missing, 'node-sqlite3-wasm.wasm'));
  await copyFile(join(DIST, 'node-sqlite3-wasm.wasm'), join(damaged, 'node-sqlite3-wasm.wasm'));
  // sql.js's file cut in its middle (a write that stopped), and so no longer a module.
  const whole = await readFile(join(DIST, 'sql-wasm.wasm'));
  await writeFile(join(damaged, 'sql-wasm.wasm'), whole.subarray(0, whole.length >> 1));
  const script = `
    const entry = require(${JSON.stringify(CLI)});
    const outcomes = [${JSON.stringify(missing)}, ${JSON.stringify(damaged)}, ${JSON.stringify(DIST)}].map((dir) => entry.compileSqliteAhead(dir) === undefined ? 'none' : 'compiled');
    require('node:http');
    process.stdout.write(JSON.stringify(outcomes));`;
  assert.deepEqual(await printedKeepingCodeCaches(script), ['none', 'none', 'compiled']);
});

test("the tiering budget set back after SQLite's compile is the running V8's own default (else every built-in module's code cache is refused)", () => {
  const options = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const own = /default: --wasm-tiering-budget=(\d+)/.exec(options);
  assert.ok(own, 'this Node has the flag');
  assert.equal(defaultTieringBudget(), Number(own[1]), `V8 ${process.versions.v8}`);
});

test("every Node bundle of the build (dist, dist/sdk; the Worker relay's dist/worker is not Node's) is ASCII (V8 keeps cli-main.js's text one byte a character), comments' dashes escaped", async () => {
  for (const dir of [DIST, join(DIST, 'sdk')]) {
    for (const name of (await readdir(dir)).filter((n) => n.endsWith('.js'))) {
      const text = await readFile(join(dir, name), 'utf8');
      const other = /[^\x00-\x7f]/.exec(text);
      assert.equal(other, null, `${name}: ${JSON.stringify(text.slice(Math.max(0, (other?.index ?? 0) - 40), (other?.index ?? 0) + 10))}`);
    }
  }
  // The bundle is the function the loader compiles as it is (no 2 MB string joined at each start).
  const bundle = await readFile(join(DIST, 'cli-main.js'), 'utf8');
  assert.ok(bundle.startsWith('(function (exports, require, module, __filename, __dirname) {'), bundle.slice(0, 80));
});

test('a bundle with characters other than ASCII (not written by the build) is still read as UTF-8', async (t) => {
  const temp = await tempDir('ra-code-cache-utf8-');
  t.after(temp.cleanup);
  for (const name of ['cli.js', 'cli-main.js']) await copyFile(join(DIST, name), join(temp.dir, name));
  const bundle = join(temp.dir, 'cli-main.js');
  const source = await readFile(bundle, 'utf8');
  await writeFile(bundle, source.replace('usage:\n  remote-assistant serve', 'usagé — \u{1F44B}:\n  remote-assistant serve'));
  const { code, stderr } = await run(join(temp.dir, 'cli.js'));
  assert.equal(code, 2);
  assert.match(stderr, /^usagé — \u{1F44B}:\n {2}remote-assistant serve/u);
});
