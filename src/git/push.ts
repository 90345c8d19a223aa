import { ServiceError } from '../protocol/errors';
import type { PushResult, WorktreeRecord } from '../protocol/worktrees';
import { requireFolder } from './changes';
import { compareUrlOf } from './compare-url';
import { nulFields, gitIn } from './git-in';
import { GitError } from './run-git';

/**
 * The program a push starts at the other end (run by a shell here for a local or ssh remote): git's own,
 * whatever `remote.<name>.receivepack` the repository's config names; and no `ext::` URL (a command line)
 * even where the config allows the protocol.
 */
const RECEIVE_PACK = 'git-receive-pack';

/**
 * push_changes: the conversation's branch pushed to `remote` (its own name there), and the page that
 * opens a pull or merge request for it where the remote's host is one we know. The remote name is
 * checked against the repository's remotes first, so it can never be read as an option or a URL.
 */
export async function pushChanges(worktree: WorktreeRecord, remote: string, options: { allowHooks: boolean }): Promise<PushResult> {
  await requireFolder(worktree);
  // A name is the repository config's to choose, and `git remote` lists one that reads as an option
  // (`--receive-pack=<command>` would be run by the push): refused, and every name follows `--`.
  if (remote.startsWith('-')) throw new ServiceError('invalid_request', `a remote named ${remote} would be read by git as an option: rename it to push there`);
  const remotes = (await gitIn(worktree.repository, ['remote'])).stdout.split('\n').filter(Boolean);
  if (!remotes.includes(remote)) {
    throw new ServiceError('invalid_request', remotes.length > 0 ? `the repository has no remote named ${remote} (it has ${remotes.join(', ')})` : 'the repository has no remote to push to');
  }
  const url = (await gitIn(worktree.repository, ['remote', 'get-url', '--push', '--', remote])).stdout.trim();
  try {
    await gitIn(
      worktree.path,
      ['-c', 'protocol.ext.allow=never', 'push', '--porcelain', `--receive-pack=${RECEIVE_PACK}`, '--', remote, `refs/heads/${worktree.branch}:refs/heads/${worktree.branch}`],
      { allowHooks: options.allowHooks, timeoutMs: 120_000 },
    );
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    const reason = error.stderr
      .trim()
      .split('\n')
      .filter((line) => !line.startsWith('To ') && !line.startsWith('hint:'))
      .slice(-2)
      .join(' ');
    throw new ServiceError('conflict', `git could not push ${worktree.branch} to ${remote}: ${redactUrls(reason) || `exit ${error.code}`}`);
  }
  return { remote, branch: worktree.branch, compare_url: compareUrlOf(url, worktree.branch, worktree.baseBranch) };
}

/** What discarding would lose: commits not in the base branch and files changed but not committed. */
export async function unlandedWork(worktree: WorktreeRecord): Promise<{ commits: number; uncommittedFiles: number }> {
  const base = worktree.baseBranch ? `refs/heads/${worktree.baseBranch}` : worktree.baseCommit;
  const tip = `refs/heads/${worktree.branch}`;
  const commits = await gitIn(worktree.repository, ['rev-list', '--count', `${base}..${tip}`]).then(
    (out) => Number(out.stdout.trim()),
    () => 0,
  );
  const uncommittedFiles = await gitIn(worktree.path, ['status', '--porcelain=v1', '-z', '--untracked-files=all'], { readOnly: true }).then(
    (out) => nulFields(out.stdout).filter((field) => /^.. /.test(field)).length,
    () => 0,
  );
  return { commits, uncommittedFiles };
}

/** discard_changes: the worktree's folder and its branch removed (git's own bookkeeping of both too). */
export async function discardWorktree(worktree: WorktreeRecord): Promise<void> {
  await gitIn(worktree.repository, ['worktree', 'remove', '--force', '--force', worktree.path]).catch(async (error: unknown) => {
    // A folder deleted outside the service: git forgets it on prune.
    if (!(error instanceof GitError)) throw error;
    await gitIn(worktree.repository, ['worktree', 'prune']);
  });
  await gitIn(worktree.repository, ['branch', '-D', worktree.branch], { okCodes: [1] });
}

/** A remote's error may quote its URL with a token in it. */
function redactUrls(text: string): string {
  return text.replace(/([a-z+]+:\/\/)[^/@\s]+@/gi, '$1');
}
