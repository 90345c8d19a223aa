// The git starter parked by the command line's entry (src/git/starter-process.ts, cli-loader.ts): a shell
// forked from the entry before the service loads, that becomes the starter (exec of Node, the same
// process) when the first starter is wanted, so that the service never forks itself for it at listening.
// Real processes: /bin/sh, node, git. A file of its own: git-starter.ts keeps one starter per process.
import assert from 'node:assert/strict';
import childProcess, { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { gitStarter, gitStarterPid } from '../../src/git/git-starter';
import { parkStarter } from '../../src/git/starter-process';
import { gitOutput } from '../../src/git/run-git';
import { waitFor } from '../helpers/temp';

const commandOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
};

test(
  "the parked starter becomes the first starter: the same process, a shell until then, and no process of the service's own is started",
  { skip: process.platform !== 'linux' && 'reads /proc' },
  async () => {
    const parked = parkStarter();
    assert.ok(parked?.pid !== undefined);
    await waitFor(() => commandOf(parked.pid!) === 'sh', 'the parked shell');
    gitStarter.adopt(parked);
    const spawn = childProcess.spawn;
    const started: string[] = [];
    childProcess.spawn = ((file: string, ...rest: unknown[]) => {
      started.push(file);
      return (spawn as (...all: unknown[]) => unknown)(file, ...rest);
    }) as typeof spawn;
    let version = '';
    try {
      gitStarter.prepare();
      version = await gitOutput(['--version'], { cwd: process.cwd(), readOnly: true });
    } finally {
      childProcess.spawn = spawn;
    }
    assert.match(version, /^git version /);
    assert.deepEqual(started, []);
    assert.equal(gitStarterPid(), parked.pid);
    assert.equal(commandOf(parked.pid), 'node');
    assert.equal(parked.release(), undefined, 'released once');
  },
);

test('a parked starter never released ends with the process that parked it (its shell reads the end of its input)', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const parker = spawn(process.execPath, ['--import', 'tsx', '-e', `process.stdout.write(String(require(${JSON.stringify(join(__dirname, '../../src/git/starter-process.ts'))}).parkStarter().pid))`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  parker.stdout.on('data', (d) => (out += d));
  // It exits by itself: the parked shell keeps nothing of it alive.
  assert.equal(await new Promise((resolve) => parker.on('exit', resolve)), 0);
  const pid = Number(out);
  assert.ok(pid > 0);
  await waitFor(() => commandOf(pid) === undefined || commandOf(pid) !== 'sh', 'the parked shell to end');
  assert.notEqual(commandOf(pid), 'node');
});

test('no file descriptor left (EMFILE): parking a starter gives up (undefined, the starter is spawned later as before) instead of throwing at the entry', async () => {
  // In a process of its own: its descriptor table is filled to the last one.
  const script = `
    const { openSync } = require('node:fs');
    const { parkStarter } = require(${JSON.stringify(join(__dirname, '../../src/git/starter-process.ts'))});
    const fds = [];
    try { for (;;) fds.push(openSync('/dev/null', 'r')); } catch {}
    let outcome;
    try { outcome = parkStarter() === undefined ? 'undefined' : 'parked'; } catch (e) { outcome = 'threw: ' + e.message; }
    process.stdout.write(outcome);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(out, 'undefined');
});
