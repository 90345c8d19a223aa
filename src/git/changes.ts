import { copyFile, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ServiceError } from '../protocol/errors';
import type { Changes, WorktreeRecord } from '../protocol/worktrees';
import { DEFAULT_DIFF_LIMITS, parseGitDiff, type DiffLimits } from './diff-parse';
import { nulFields, gitIn, type GitOptions } from './git-in';

/** The diff flags of every review read: git's own diff, no driver the repository's config or attributes name. */
export const DIFF_FLAGS = ['--no-color', '--no-ext-diff', '--no-textconv', '-M'] as const;

/**
 * A conversation's changes against its base_commit (docs/protocol.md, "Review and land"): what is
 * committed on its branch and what is not yet, untracked files included, as one diff.
 *
 * Untracked files join the diff as intent-to-add entries (`git add -N`) in a copy of the worktree's
 * index, so the worktree's own index is never written (the agent's `git` commands may hold its lock)
 * and one `git diff <base>` reads everything: no process per new file.
 */
export async function changesOf(worktree: WorktreeRecord, limits: DiffLimits = DEFAULT_DIFF_LIMITS): Promise<Changes> {
  await requireFolder(worktree);
  return withScratchIndex(worktree.path, async (env) => {
    const [untracked, commits, baseTip] = await Promise.all([
      gitIn(worktree.path, ['ls-files', '-z', '--others', '--exclude-standard']).then((out) => nulFields(out.stdout)),
      gitIn(worktree.path, ['rev-list', '--count', `${worktree.baseCommit}..HEAD`]).then((out) => Number(out.stdout.trim())),
      worktree.baseBranch ? gitIn(worktree.repository, ['rev-parse', '--verify', '-q', `refs/heads/${worktree.baseBranch}`], { okCodes: [1] }).then((out) => out.stdout.trim()) : Promise.resolve(worktree.baseCommit),
    ]);
    if (untracked.length > 0) await gitIn(worktree.path, ['add', '-N', '--pathspec-from-file=-', '--pathspec-file-nul'], { env, input: untracked.join('\0') });
    const [diff, uncommitted] = await Promise.all([
      gitIn(worktree.path, ['diff', ...DIFF_FLAGS, worktree.baseCommit], { env }),
      commits === 0 ? Promise.resolve(undefined) : gitIn(worktree.path, ['diff', '--no-ext-diff', '--no-textconv', '--name-only', '-z', 'HEAD'], { env }).then((out) => nulFields(out.stdout).length),
    ]);
    const files = parseGitDiff(diff.stdout, limits);
    return {
      conversation_id: worktree.conversationId,
      worktree: {
        branch: worktree.branch,
        base_branch: worktree.baseBranch,
        base_commit: worktree.baseCommit,
        path: worktree.path,
        state: worktree.state,
        changed_files: files.length,
        base_moved: baseTip !== worktree.baseCommit,
      },
      files,
      commits,
      uncommitted_files: uncommitted ?? files.length,
    };
  });
}

/** The worktree's folder must still be there: deleted outside the service, it is a clear answer, not git's. */
export async function requireFolder(worktree: WorktreeRecord): Promise<void> {
  const found = await stat(worktree.path).then((s) => s.isDirectory(), () => false);
  if (!found) throw new ServiceError('conflict', `the worktree's folder ${worktree.path} is gone (deleted outside the service): discard_changes removes what is left of it`);
}

/**
 * Runs `work` with GIT_INDEX_FILE pointing at a copy of the worktree's index (removed after), so
 * reads that need untracked files as entries leave the real index as it was.
 */
export async function withScratchIndex<T>(worktreePath: string, work: (env: NonNullable<GitOptions['env']>) => Promise<T>): Promise<T> {
  const real = (await gitIn(worktreePath, ['rev-parse', '--path-format=absolute', '--git-path', 'index'])).stdout.trim();
  return withTempIndex(real, work);
}

/** GIT_INDEX_FILE of a temporary index: a copy of `copyOf` (empty when null or absent), removed after `work`. */
export async function withTempIndex<T>(copyOf: string | null, work: (env: NonNullable<GitOptions['env']>) => Promise<T>): Promise<T> {
  const folder = await mkdtemp(path.join(tmpdir(), 'ra-index-'));
  const scratch = path.join(folder, 'index');
  try {
    if (copyOf !== null) {
      await copyFile(copyOf, scratch).catch((error: NodeJS.ErrnoException) => {
        // An index never written (nothing checked out) reads as an empty one.
        if (error.code !== 'ENOENT') throw error;
      });
    }
    return await work({ GIT_INDEX_FILE: scratch });
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
