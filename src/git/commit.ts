import { firstCodePoints } from '../protocol/code-points';
import { ServiceError } from '../protocol/errors';
import type { WorktreeRecord } from '../protocol/worktrees';
import { requireFolder } from './changes';
import { gitIn, nulFields } from './git-in';
import { refuseRawLfsFiles } from './lfs';
import { GitError } from './run-git';

export interface CommitOptions {
  /** service.json `worktrees.allow_hooks`: the repository's hooks (pre-commit, commit-msg...) run. */
  allowHooks: boolean;
}

/**
 * commit_changes: everything in the worktree (new files too) committed on its branch, as the user's own
 * git identity: their config, never a name git makes up from the host (`user.useConfigOnly`).
 */
export async function commitChanges(worktree: WorktreeRecord, message: string, options: CommitOptions): Promise<{ commit: string }> {
  await requireFolder(worktree);
  await requireIdentity(worktree.path);
  const hooks = { allowHooks: options.allowHooks };
  await gitIn(worktree.path, ['add', '-A', '--', '.'], hooks);
  // One staged diff answers both questions: is there anything to commit, and which files are written
  // (a deleted file stores no blob, so LFS has nothing to check of it).
  const staged = stagedFiles(nulFields((await gitIn(worktree.path, ['diff', '--cached', '--name-status', '-z', '--no-renames', '--no-ext-diff'])).stdout));
  if (staged.length === 0) throw new ServiceError('conflict', 'nothing to commit: the worktree has no changes since its last commit');
  const changed = staged.filter((file) => file.status !== 'D').map((file) => file.path);
  try {
    await refuseRawLfsFiles(worktree.path, '', changed);
  } catch (error) {
    // Refused: nothing left staged (the working tree keeps every change).
    await gitIn(worktree.path, ['reset', '-q']);
    throw error;
  }
  try {
    await gitIn(worktree.path, ['-c', 'user.useConfigOnly=true', 'commit', '-q', '--no-edit', '--cleanup=strip', '-F', '-'], { ...hooks, input: message });
  } catch (error) {
    // A hook the owner allowed may refuse the commit: its own words are the answer.
    if (error instanceof GitError) throw new ServiceError('conflict', `git did not commit: ${firstCodePoints(error.stderr.trim(), 500) || `exit ${error.code}`}`);
    throw error;
  }
  return { commit: (await gitIn(worktree.path, ['rev-parse', 'HEAD'])).stdout.trim() };
}

/** `git diff --name-status -z --no-renames` fields as files: a status letter, then its path (one path each, renames being off). */
function stagedFiles(fields: readonly string[]): { status: string; path: string }[] {
  const files: { status: string; path: string }[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) files.push({ status: fields[i], path: fields[i + 1] });
  return files;
}

/** A clear error, before anything is staged, when git has no name or email to commit as. */
export async function requireIdentity(folder: string): Promise<void> {
  const value = async (key: string) => (await gitIn(folder, ['config', '--get', key], { okCodes: [1] })).stdout.trim();
  const [name, email] = await Promise.all([value('user.name'), value('user.email')]);
  const missing = [!name && 'user.name', !email && 'user.email'].filter(Boolean);
  if (missing.length > 0) {
    throw new ServiceError(
      'invalid_request',
      `git has no ${missing.join(' or ')} to commit as: set them (git config --global user.name "Your Name"; git config --global user.email you@example.com) and try again`,
    );
  }
}
