import { ServiceError } from '../protocol/errors';
import { GitError, runGit, type GitOptions, type GitResult } from './run-git';

/** Enough for the diff of thousands of changed files; a bigger one is cut by the reader (diff-parse.ts). */
export const GIT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

export type ReviewGitOptions = Omit<GitOptions, 'cwd'>;

/**
 * Review's git (get_changes, revert, commit, land, push, discard) through the one runner (run-git.ts:
 * no hooks unless allowed, no fsmonitor, no filter, no inherited GIT_ variable), with literal pathspecs
 * (a file named `*` is that file) and room for a big diff. git missing or too slow is a clear answer.
 * `cwd` is a working tree's top level (a conversation's worktree, the workspace's repository) and git's
 * work tree is pinned to it: `core.worktree` in a worktree's config.worktree (which the agent's own
 * `git config --worktree` can write) would otherwise point a revert or a commit at the person's tree.
 */
export async function gitIn(cwd: string, args: readonly string[], options: ReviewGitOptions = {}): Promise<GitResult> {
  try {
    return await runGit([`--work-tree=${cwd}`, '--literal-pathspecs', ...args], { cwd, maxBytes: GIT_MAX_OUTPUT_BYTES, ...options });
  } catch (error) {
    if (error instanceof GitError && error.kind === 'missing')
      throw new ServiceError('server_error', 'git is not installed (or not on the PATH the service was started with): worktrees and their review need it');
    if (error instanceof GitError && error.kind === 'timeout') throw new ServiceError('server_error', `git took too long to answer (${subcommandOf(args)})`);
    const lock = error instanceof GitError ? lockFileOf(error.stderr) : undefined;
    if (lock) throw new ServiceError('conflict', lockedText(lock));
    throw error;
  }
}

/** The git subcommand `args` run (`push` of `-c protocol.ext.allow=never push ...`): past git's own options and their values. */
export function subcommandOf(args: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-c' || args[i] === '-C') i++;
    else if (!args[i].startsWith('-')) return args[i];
  }
  return args[0] ?? 'git';
}

/**
 * The lock file git found in its way (`Unable to create '<path>.lock': File exists`): another git runs
 * there, or one was stopped in the middle (kill -9, a crash) and left it. The service never deletes one:
 * it cannot tell a stale lock from the person's own git at work (`git commit` waiting on its editor).
 */
function lockFileOf(stderr: string): string | undefined {
  return /Unable to create '([^']+\.lock)': File exists/.exec(stderr)?.[1];
}

function lockedText(lock: string): string {
  return `git found ${lock} in its way: another git is running there, or one was stopped in the middle (a kill -9, a crash) and left it. Nothing was changed. If no git is running, delete that file and try again.`;
}

/** NUL-separated fields of a `-z` output. */
export function nulFields(stdout: string): string[] {
  const fields = stdout.split('\0');
  if (fields.at(-1) === '') fields.pop();
  return fields;
}
