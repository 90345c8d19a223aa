import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { gitSummary } from '../../src/agent/prompt/git-status';
import { tempDir } from '../helpers/temp';

// The environment block asks git for a workspace's status every turn, whoever sent the message (a
// webhook's text included). A repository's own config is the repository's files: unpacked from an
// archive or a download, its .git/config can name commands that `git status` runs. None may run.

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe' });

async function repository(dir: string): Promise<void> {
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'a@example.invalid');
  git(dir, 'config', 'user.name', 'a');
  await writeFile(join(dir, 'notes.txt'), 'one\n');
  await writeFile(join(dir, 'readme.md'), 'one\n');
  git(dir, 'add', 'notes.txt', 'readme.md');
  git(dir, 'commit', '-q', '-m', 'one');
}

test('attack: core.fsmonitor in the repository config is not run by the environment block', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  await repository(dir);
  const marker = join(dir, 'fsmonitor-ran');
  git(dir, 'config', 'core.fsmonitor', `touch '${marker}'; false`);
  const summary = await gitSummary(dir);
  assert.equal(existsSync(marker), false, 'the repository config ran a command');
  assert.equal(summary?.branch, 'main');
});

test('attack: filters (clean, process) named by .gitattributes and the repository config is not run', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  await repository(dir);
  const marker = join(dir, 'filter-ran');
  git(dir, 'config', 'filter.evil.clean', `touch '${marker}'; cat`);
  git(dir, 'config', 'filter.long.running.process', `touch '${marker}'`);
  await writeFile(join(dir, '.gitattributes'), '*.txt filter=evil\n*.md filter=long.running\n');
  // Changed files whose stat no longer matches the index: status must look at their content.
  const later = new Date(Date.now() + 60_000);
  for (const name of ['notes.txt', 'readme.md']) {
    await writeFile(join(dir, name), 'two\n');
    await utimes(join(dir, name), later, later);
  }
  const summary = await gitSummary(dir);
  assert.equal(existsSync(marker), false, 'the repository config ran a command');
  assert.equal(summary?.branch, 'main');
});
