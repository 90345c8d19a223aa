import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { WorktreeRecords } from '../../src/commands/context';
import type { WorktreeRecord } from '../../src/protocol/worktrees';
import { tempDir } from './temp';

/**
 * Git for tests: an identity of its own (HOME at a temp dir holding its .gitconfig, no system config),
 * so a test never depends on, nor writes, the machine's; the service's git runner drops GIT_ variables,
 * so HOME is what reaches it. Call before any git runs (again, without identity, for a test of that).
 */
export async function isolateGitConfig(identity = true): Promise<{ home: string; cleanup: () => Promise<void> }> {
  const temp = await tempDir('ra-githome-');
  await writeFile(join(temp.dir, '.gitconfig'), identity ? '[user]\n\tname = Test Person\n\temail = person@example.com\n[init]\n\tdefaultBranch = main\n' : '[init]\n\tdefaultBranch = main\n');
  process.env.HOME = temp.dir;
  process.env.XDG_CONFIG_HOME = join(temp.dir, '.config');
  process.env.GIT_CONFIG_NOSYSTEM = '1';
  for (const name of ['GIT_CONFIG_GLOBAL', 'GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL', 'EMAIL']) delete process.env[name];
  return { home: temp.dir, cleanup: temp.cleanup };
}

/** Runs the real git in `cwd` (the test's own, plain: hooks and config of the repository apply) and answers its output. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: 'pipe', env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } }).toString();
}

/** A repository on `main` in `dir` (made if needed) with `files` committed, its identity set locally. Answers HEAD's commit. */
export async function gitRepository(dir: string, files: Record<string, string>): Promise<string> {
  await mkdir(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'test@example.invalid');
  git(dir, 'config', 'user.name', 'Test');
  await writeFiles(dir, files);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'first');
  return git(dir, 'rev-parse', 'HEAD').trim();
}

export async function writeFiles(root: string, files: Record<string, string | Buffer>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, name)), { recursive: true });
    await writeFile(join(root, name), content);
  }
}

export interface TestRepo {
  /** The user's repository (its working tree). */
  repo: string;
  /** Where worktrees are made (outside the repository). */
  worktrees: string;
  cleanup(): Promise<void>;
}

/** A repository on `main` with `files` committed. */
export async function makeRepo(files: Record<string, string | Buffer>): Promise<TestRepo> {
  const temp = await tempDir('ra-git-');
  const repo = join(temp.dir, 'repo');
  await mkdir(repo);
  git(repo, 'init', '-q', '-b', 'main');
  await writeFiles(repo, files);
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base');
  return { repo, worktrees: join(temp.dir, 'worktrees'), cleanup: temp.cleanup };
}

/** A conversation's worktree made as the worktree runs make it: a new branch from the workspace's HEAD, in a folder outside it. */
export function addWorktree(test: TestRepo, conversationId: string): WorktreeRecord {
  const branch = `assistant/test-${conversationId}`;
  const path = join(test.worktrees, conversationId);
  const baseCommit = git(test.repo, 'rev-parse', 'HEAD').trim();
  const baseBranch = git(test.repo, 'symbolic-ref', '--short', 'HEAD').trim();
  git(test.repo, 'worktree', 'add', '-q', '-b', branch, path, baseCommit);
  return { conversationId, repository: test.repo, path, branch, baseBranch, baseCommit, state: 'active', createdAt: new Date().toISOString() };
}

/** `git status` and HEAD of a working tree: what a refused land must leave identical. */
export function snapshot(cwd: string): { status: string; head: string } {
  return { status: git(cwd, 'status', '--porcelain=v1', '--untracked-files=all'), head: git(cwd, 'rev-parse', 'HEAD').trim() };
}

/** The worktree records a service reads (ServiceOptions.worktrees), kept by the test that made the worktrees. */
export class TestWorktrees implements WorktreeRecords {
  readonly rows = new Map<string, WorktreeRecord>();
  worktreeOf(id: string): WorktreeRecord | undefined {
    return this.rows.get(id);
  }
  async setState(id: string, state: WorktreeRecord['state']): Promise<boolean> {
    const row = this.rows.get(id);
    if (row) this.rows.set(id, { ...row, state });
    return Boolean(row);
  }
  async setStats(id: string): Promise<boolean> {
    return this.rows.has(id);
  }
}
