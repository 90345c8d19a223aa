import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { GitError, gitOutput, runGit } from '../../src/git/run-git';
import { tempDir } from '../helpers/temp';

// src/git is the one place the service runs git. A repository's hooks and config are its files: none
// of what they name may run from a git the service runs, and the service's own environment (a GIT_DIR
// left by a hook that started the editor, say) must not point git elsewhere.

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe' }).toString();

async function repository(dir: string): Promise<void> {
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'a@example.invalid');
  git(dir, 'config', 'user.name', 'a');
  await writeFile(join(dir, 'notes.txt'), 'one\n');
  git(dir, 'add', 'notes.txt');
  git(dir, 'commit', '-q', '-m', 'one');
}

async function hook(file: string, marker: string): Promise<void> {
  await writeFile(file, `#!/bin/sh\ntouch '${marker}'\n`);
  chmodSync(file, 0o755);
}

test('attack: hooks of the repository (.git/hooks and core.hooksPath) do not run from a commit the service runs', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  await repository(dir);
  const marker = join(dir, 'hook-ran');
  for (const name of ['pre-commit', 'commit-msg', 'post-commit']) await hook(join(dir, '.git', 'hooks', name), marker);
  // The hooks are live for git run plainly: the test is not vacuous.
  await writeFile(join(dir, 'notes.txt'), 'two\n');
  git(dir, 'commit', '-q', '-am', 'plain');
  assert.equal(existsSync(marker), true, 'a plain git runs the hook');
  execFileSync('rm', [marker]);

  await writeFile(join(dir, 'notes.txt'), 'three\n');
  await runGit(['commit', '-q', '-am', 'through the runner'], { cwd: dir });
  assert.equal(existsSync(marker), false, 'a hook in .git/hooks ran');

  await mkdir(join(dir, 'elsewhere'));
  await hook(join(dir, 'elsewhere', 'pre-commit'), marker);
  git(dir, 'config', 'core.hooksPath', join(dir, 'elsewhere'));
  await writeFile(join(dir, 'notes.txt'), 'four\n');
  await runGit(['commit', '-q', '-am', 'again'], { cwd: dir });
  assert.equal(existsSync(marker), false, 'the hook core.hooksPath names ran');
  assert.equal((await gitOutput(['log', '-1', '--format=%s'], { cwd: dir })).trim(), 'again');
});

test('a process that runs git with hooks disabled leaves nothing in the temporary folder (one empty folder leaked a start)', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  await repository(dir);
  const tmp = join(dir, 'tmp');
  await mkdir(tmp);
  // A process of its own: the hooks setting is made once a process, so an earlier test here may have made it already.
  const script = `require('./src/git/run-git').runGit(['status', '--porcelain'], { cwd: ${JSON.stringify(dir)} }).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });`;
  execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: join(__dirname, '..', '..'), env: { ...process.env, TMPDIR: tmp }, stdio: 'pipe' });
  // tsx (which runs this TypeScript) keeps its cache there; anything else is ours.
  const left = (await readdir(tmp)).filter((name) => !name.startsWith('tsx-'));
  assert.deepEqual(left, [], 'git run by the service left files in the temporary folder');
});

test('attack: a required smudge filter of the config (LFS-like) is not run by a checkout; the file stays as stored', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  await repository(dir);
  await writeFile(join(dir, '.gitattributes'), '*.bin filter=lfs\n');
  await writeFile(join(dir, 'big.bin'), 'version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n');
  git(dir, 'add', '.gitattributes', 'big.bin');
  git(dir, 'commit', '-q', '-m', 'lfs');
  const marker = join(dir, 'smudge-ran');
  git(dir, 'config', 'filter.lfs.smudge', `touch '${marker}'; cat`);
  git(dir, 'config', 'filter.lfs.process', `touch '${marker}'`);
  git(dir, 'config', 'filter.lfs.required', 'true');
  await runGit(['worktree', 'add', '-q', '-b', 'side', join(dir, '..', 'side-wt'), 'HEAD'], { cwd: dir });
  t.after(() => execFileSync('rm', ['-rf', join(dir, '..', 'side-wt')]));
  assert.equal(existsSync(marker), false, 'the smudge filter ran');
  assert.match(await readFile(join(dir, '..', 'side-wt', 'big.bin'), 'utf8'), /^version https:\/\/git-lfs/);
});

test("the service environment's GIT_ variables do not reach git", async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const mine = join(dir, 'mine');
  const other = join(dir, 'other');
  await mkdir(mine);
  await mkdir(other);
  await repository(mine);
  git(other, 'init', '-q', '-b', 'other-branch');
  const saved = { ...process.env };
  t.after(() => {
    for (const key of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_CONFIG_COUNT', 'GIT_CONFIG_KEY_0', 'GIT_CONFIG_VALUE_0']) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  });
  process.env.GIT_DIR = join(other, '.git');
  process.env.GIT_WORK_TREE = other;
  process.env.GIT_CONFIG_COUNT = '1';
  process.env.GIT_CONFIG_KEY_0 = 'core.fsmonitor';
  process.env.GIT_CONFIG_VALUE_0 = `touch '${join(dir, 'ran')}'`;
  assert.equal((await gitOutput(['rev-parse', '--abbrev-ref', 'HEAD'], { cwd: mine })).trim(), 'main');
});

test('git missing, not a repository, a bad command: a GitError of the right kind, never a crash', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const failure = await runGit(['rev-parse', '--show-toplevel'], { cwd: dir }).catch((error: unknown) => error);
  assert.ok(failure instanceof GitError);
  assert.equal(failure.kind, 'failed');
  assert.match(failure.message, /not a git repository/);
  assert.equal((await runGit(['config', '--get', 'no.such'], { cwd: dir, okCodes: [1] })).code, 1);

  const path = process.env.PATH;
  t.after(() => {
    process.env.PATH = path;
  });
  process.env.PATH = dir;
  const missing = await runGit(['status'], { cwd: dir }).catch((error: unknown) => error);
  assert.ok(missing instanceof GitError);
  assert.equal(missing.kind, 'missing');
});
