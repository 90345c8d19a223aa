// A git ended at a timeout whose pipes a child of its own still holds (a hook's, ssh's, a credential
// helper's) closes only when that child ends. Found in review: the starter's bound for answering a kill
// read that as a hung starter: it sent SIGTERM to the git's pid (already reaped by the starter, so free
// for reuse by any process) and killed the healthy starter, failing every other run in flight.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { gitStarter, gitStarterPid } from '../../src/git/git-starter';
import { tempDir } from '../helpers/temp';

test('attack: a git ended while a child of its own holds its pipes is not taken for a hung starter: the starter is kept and another run finishes', { timeout: 60_000 }, async (t) => {
  const { dir: bin, cleanup } = await tempDir('ra-fake-git-');
  t.after(cleanup);
  // A stand-in git: `slow` answers after 7 s; anything else leaves a child holding its pipes, then waits.
  await writeFile(join(bin, 'git'), '#!/bin/sh\nif [ "$1" = slow ]; then sleep 7; echo done; exit 0; fi\nsleep 12 &\nexec sleep 60\n', { mode: 0o755 });
  const env = { PATH: `${bin}:${process.env.PATH}` };
  const runOf = (args: string[]) => {
    let settle!: (value: { code: number | null; error?: { message: string } }) => void;
    const closed = new Promise<{ code: number | null; error?: { message: string } }>((resolve) => (settle = resolve));
    const run = gitStarter.start({ args, env }, { onStdout: () => undefined, onStderr: () => undefined, onClose: (code, _signal, error) => settle({ code, error }) });
    return { run, closed };
  };
  const other = runOf(['slow']);
  const held = runOf(['hold']);
  await held.run.ready;
  const starter = gitStarterPid();
  assert.ok(starter !== undefined, 'git is started by the starter');
  await new Promise((resolve) => setTimeout(resolve, 500));
  held.run.kill(); // as a timeout does
  assert.equal((await held.closed).code, null, 'the killed run ends');
  assert.deepEqual(await other.closed, { code: 0, error: undefined }, 'the other run was not failed');
  assert.equal(gitStarterPid(), starter, 'the starter answered: it is kept');
});
