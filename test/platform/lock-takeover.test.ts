// Two processes starting at once on a data directory whose lock was left by a dead process: exactly one
// may take it over. Each judges the lock stale and removes it; one that removes it late must not remove
// the lock the other has made meanwhile (then both would hold the directory and write one store).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../helpers/temp';

const CONTENDER = `
const fsp = require('node:fs/promises');
const { syncBuiltinESMExports } = require('node:module');
let [dir, role, at, lockModule] = process.argv.slice(2);
if (role === 'writes-late' || role === 'second' || role === 'empty-first') {
  // A file system without hard links: the lock is made by the O_EXCL fallback, created empty, then written.
  fsp.link = async () => { throw Object.assign(new Error('link not supported'), { code: 'EPERM' }); };
  syncBuiltinESMExports();
}
if (role === 'writes-late' || role === 'empty-first') {
  // Widens the window between the fallback's create and its write, as a loaded machine does.
  const realOpen = fsp.open;
  fsp.open = async (p, ...rest) => {
    const handle = await realOpen(p, ...rest);
    if (String(p).endsWith('service.lock')) {
      const write = handle.writeFile.bind(handle);
      handle.writeFile = async (...args) => { await new Promise((r) => setTimeout(r, 1000)); return write(...args); };
    }
    return handle;
  };
  syncBuiltinESMExports();
}
if (role === 'second') {
  // Starts once the other's lock exists, still empty.
  const { existsSync } = require('node:fs');
  const path = require('node:path');
  at = String(Date.now());
  globalThis.startWhen = () => new Promise((r) => { const look = () => existsSync(path.join(dir, 'service.lock')) ? r() : setTimeout(look, 2); look(); });
}
if (role === 'empty-second') {
  // Judges the stale lock at once, but gets to take it over only after the other has (and has made its own, still empty).
  const realLink = fsp.link;
  fsp.link = async (from, to) => { if (String(to).endsWith('.takeover')) await new Promise((r) => setTimeout(r, 800)); return realLink(from, to); };
  syncBuiltinESMExports();
}
if (role === 'slow' || role === 'empty-first') {
  // Widens the window between judging the lock stale and removing it, as a loaded machine does.
  const real = fsp.unlink;
  fsp.unlink = async (p) => { if (p.endsWith('service.lock')) await new Promise((r) => setTimeout(r, 400)); return real(p); };
  syncBuiltinESMExports();
}
(async () => {
  const { acquireLock } = require(lockModule);
  await new Promise((r) => setTimeout(r, Number(at) - Date.now()));
  if (globalThis.startWhen) await globalThis.startWhen();
  try {
    await acquireLock(dir, { warn() {} });
    console.log('ACQUIRED');
    await new Promise((r) => setTimeout(r, 1500));
  } catch (e) {
    console.log('refused: ' + e.message);
  }
})();
`;

/** One starter in a child process; killed (its output then as far as it got) after `killAfterMs`. */
function contender(dir: string, role: string, at: number, killAfterMs = 30_000): Promise<string> {
  const script = join(dir, '..', `contender-${role}.js`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, dir, role, String(at), join(__dirname, '..', '..', 'src', 'platform', 'lock-file.ts')], {
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: killAfterMs,
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', () => resolve(out.trim()));
  });
}

test("attack: two starts at once on a dead process's lock: exactly one takes the directory over", { timeout: 60_000 }, async (t) => {
  const { dir: root, cleanup } = await tempDir('ra-lock-takeover-');
  t.after(cleanup);
  const dir = join(root, 'data');
  execFileSync('mkdir', [dir]);
  for (const role of ['fast', 'slow']) await writeFile(join(root, `contender-${role}.js`), CONTENDER);
  // A pid that was surely a process and is now gone: a child that ended.
  const gone = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => gone.on('exit', resolve));
  await writeFile(join(dir, 'service.lock'), JSON.stringify({ pid: gone.pid, hostname: hostname(), started_at: new Date().toISOString() }));
  const at = Date.now() + 2500;
  const outcomes = await Promise.all([contender(dir, 'fast', at), contender(dir, 'slow', at)]);
  assert.equal(outcomes.filter((o) => o === 'ACQUIRED').length, 1, `both or neither held the directory: ${JSON.stringify(outcomes)}`);
  assert.match(outcomes.find((o) => o !== 'ACQUIRED') ?? '', /in use/);
});

test(
  "attack: a second start that finds the first's lock still empty (made by the O_EXCL fallback, where hard links are not supported, and not yet written) treats it as held, not as damaged",
  { timeout: 60_000 },
  async (t) => {
    const { dir: root, cleanup } = await tempDir('ra-lock-fallback-');
    t.after(cleanup);
    const dir = join(root, 'data');
    execFileSync('mkdir', [dir]);
    for (const role of ['writes-late', 'second']) await writeFile(join(root, `contender-${role}.js`), CONTENDER);
    const at = Date.now() + 1500;
    const outcomes = await Promise.all([contender(dir, 'writes-late', at), contender(dir, 'second', at)]);
    assert.deepEqual(
      outcomes.map((o) => (o === 'ACQUIRED' ? o : o.replace(/^refused: .*in use.*$/, 'in use'))),
      ['ACQUIRED', 'in use'],
      JSON.stringify(outcomes),
    );
  },
);

test('an empty lock whose mtime is in the future (a clock set back, a network file system) is waited for at most LOCK_WRITE_MS on our own clock, then taken over', { timeout: 60_000 }, async (t) => {
  const { dir: root, cleanup } = await tempDir('ra-lock-future-');
  t.after(cleanup);
  const dir = join(root, 'data');
  execFileSync('mkdir', [dir]);
  await writeFile(join(root, 'contender-plain.js'), CONTENDER);
  const lock = join(dir, 'service.lock');
  await writeFile(lock, '');
  const inAnHour = new Date(Date.now() + 3_600_000);
  await utimes(lock, inAnHour, inAnHour);
  // Before, the starter polled as long as the mtime looked young: for an hour. Killed after 20 s here.
  assert.equal(await contender(dir, 'plain', Date.now(), 20_000), 'ACQUIRED');
});

test('attack: two starts on a stale empty lock (O_EXCL fallback): the later takeover does not remove the empty lock the first has just made in its place', { timeout: 60_000 }, async (t) => {
  const { dir: root, cleanup } = await tempDir('ra-lock-empty-');
  t.after(cleanup);
  const dir = join(root, 'data');
  execFileSync('mkdir', [dir]);
  for (const role of ['empty-first', 'empty-second']) await writeFile(join(root, `contender-${role}.js`), CONTENDER);
  // Left by a starter killed between its create and its write long ago: damaged, both judge it stale.
  const lock = join(dir, 'service.lock');
  await writeFile(lock, '');
  const aMinuteAgo = new Date(Date.now() - 60_000);
  await utimes(lock, aMinuteAgo, aMinuteAgo);
  const at = Date.now() + 2500;
  const outcomes = await Promise.all([contender(dir, 'empty-first', at), contender(dir, 'empty-second', at)]);
  assert.equal(outcomes.filter((o) => o === 'ACQUIRED').length, 1, `both or neither held the directory: ${JSON.stringify(outcomes)}`);
  assert.match(outcomes.find((o) => o !== 'ACQUIRED') ?? '', /in use/);
});
