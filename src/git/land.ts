import type { LandBlock, LandMethod, LandResult, WorktreeRecord } from '../protocol/worktrees';
import { requireFolder, withTempIndex } from './changes';
import { requireIdentity } from './commit';
import { nulFields, gitIn } from './git-in';
import { refuseRawLfsFiles } from './lfs';
import { GitError } from './run-git';

export interface LandOptions {
  /** The commit's message (merge and squash); a default names the branch. */
  message?: string;
  /** service.json `worktrees.allow_hooks`: the repository's hooks run on the fast-forward. */
  allowHooks: boolean;
}

/**
 * land_changes (docs/protocol.md, "Review and land"): the branch's commits brought into the workspace's
 * branch, or nothing changed at all. The result is made without touching any working tree
 * (`git merge-tree --write-tree`, then `git commit-tree`; a rebase replays each commit in a temporary
 * index), and only then is the user's branch moved, by a fast-forward in their working tree, which git
 * refuses rather than overwrite a local change. So a conflict, the person's uncommitted edits to a file
 * the branch touches, or a commit they made meanwhile leave `git status` and HEAD as they were.
 */
export async function landChanges(worktree: WorktreeRecord, method: LandMethod, options: LandOptions): Promise<LandResult> {
  await requireFolder(worktree);
  const repo = worktree.repository;
  const blocked = (block: LandBlock): LandResult => ({ landed: false, method, commit: null, blocked: block });
  const current = (await gitIn(repo, ['symbolic-ref', '-q', '--short', 'HEAD'], { okCodes: [1] })).stdout.trim();
  if (!worktree.baseBranch || current !== worktree.baseBranch) {
    const where = current ? `has ${current} checked out` : 'is on a detached HEAD';
    return blocked({ reason: 'not_on_base', files: [], message: `the workspace ${where}; check out ${worktree.baseBranch ?? 'the branch the conversation started from'} to land into it` });
  }
  const head = await revParse(repo, 'HEAD');
  const tip = await revParse(repo, `refs/heads/${worktree.branch}`);
  const alreadyIn = (await gitIn(repo, ['merge-base', '--is-ancestor', tip, head], { okCodes: [1] })).code === 0;
  if (alreadyIn) {
    return blocked({
      reason: 'nothing_to_land',
      files: [],
      message: tip === worktree.baseCommit ? 'the branch has no commits yet: commit_changes first' : `${worktree.baseBranch} already holds every commit of ${worktree.branch}`,
    });
  }

  const touched = nulFields((await gitIn(repo, ['diff', '--name-only', '-z', '--no-renames', '--no-ext-diff', `${head}...${tip}`])).stdout);
  const dirty = await uncommittedPaths(repo);
  const overlap = touched.filter((file) => dirty.has(file));
  if (overlap.length > 0) {
    return blocked({ reason: 'uncommitted', files: overlap, message: `the workspace has uncommitted changes to ${overlap.length} file(s) the branch changes: commit or stash them first` });
  }

  const merged = await gitIn(repo, ['merge-tree', '--write-tree', '--name-only', '-z', head, tip], { okCodes: [1] });
  const [tree, ...rest] = nulFields(merged.stdout);
  if (merged.code === 1) {
    const files = [...new Set(rest.slice(0, Math.max(0, rest.indexOf(''))))];
    return blocked({ reason: 'conflict', files, message: `the branch conflicts with ${worktree.baseBranch} in ${files.length} file(s): nothing was changed` });
  }
  // Landed before by squash or rebase (copies of its commits): bringing it in again would change nothing.
  if (tree === (await gitIn(repo, ['rev-parse', `${head}^{tree}`])).stdout.trim()) {
    return blocked({ reason: 'nothing_to_land', files: [], message: `${worktree.baseBranch} already holds every change of ${worktree.branch}` });
  }

  // The attributes in force on the branch: its tip read into a scratch index.
  await withTempIndex(null, async (env) => {
    await gitIn(repo, ['read-tree', tip], { env });
    await refuseRawLfsFiles(repo, tip, touched, env, 'land');
  });
  await requireIdentity(repo);
  const made =
    method === 'rebase'
      ? await replay(repo, head, tip)
      : await commitTree(repo, tree, method === 'merge' ? [head, tip] : [head], options.message ?? (await defaultMessage(repo, method, worktree, head, tip)));
  if ('conflict' in made)
    return blocked({
      reason: 'conflict',
      files: made.conflict,
      message: `a commit of the branch does not apply on ${worktree.baseBranch} in ${made.conflict.length} file(s): nothing was changed (land with merge or squash instead)`,
    });

  try {
    await gitIn(repo, ['merge', '--ff-only', '--no-autostash', '-q', made.commit], { allowHooks: options.allowHooks });
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    // The person committed, or changed a file the land writes, between the checks and the move.
    if ((await revParse(repo, 'HEAD')) !== head) throw error;
    return blocked({
      reason: 'uncommitted',
      files: [],
      message: `git would not move ${worktree.baseBranch} (the workspace changed meanwhile): nothing was changed. ${error.stderr.trim().split('\n')[0] ?? ''}`,
    });
  }
  return { landed: true, method, commit: made.commit, blocked: null };
}

/**
 * Whether the worktree's branch is in its base branch already (the repository's own state, not the row's):
 * it has commits and each is there (a merge's fast-forward), or bringing it in would change nothing (a
 * squash's or rebase's copies). A land killed (kill -9) right after its fast-forward left the row
 * `active`; the check at start tells it this way. False when either branch is gone.
 */
export async function branchLanded(worktree: WorktreeRecord): Promise<boolean> {
  if (!worktree.baseBranch) return false;
  const repo = worktree.repository;
  const plumbing = { readOnly: true, readsNoContent: true };
  // `--` ends the revisions; exit 128 when either branch is gone.
  const tips = await gitIn(repo, ['rev-parse', `refs/heads/${worktree.branch}^{commit}`, `refs/heads/${worktree.baseBranch}^{commit}`, '--'], { ...plumbing, okCodes: [128] });
  const [tip, base] = tips.stdout.trim().split('\n');
  if (tips.code !== 0 || !tip || !base || tip === worktree.baseCommit) return false;
  if ((await gitIn(repo, ['merge-base', '--is-ancestor', tip, base], { ...plumbing, okCodes: [1] })).code === 0) return true;
  const merged = await gitIn(repo, ['merge-tree', '--write-tree', base, tip], { okCodes: [1] });
  return merged.code === 0 && merged.stdout.trim() === (await gitIn(repo, ['rev-parse', `${base}^{tree}`], plumbing)).stdout.trim();
}

async function revParse(repo: string, rev: string): Promise<string> {
  return (await gitIn(repo, ['rev-parse', '--verify', '-q', `${rev}^{commit}`])).stdout.trim();
}

/**
 * Every path `git status` names in the workspace: changed, staged, untracked (a land would overwrite it),
 * both sides of a rename. A submodule counts when its commit moved, whatever its config says, but its
 * files are not looked into: that `git status` inside it would run under its own config (its filters),
 * and the fast-forward leaves its files as they are anyway.
 */
async function uncommittedPaths(repo: string): Promise<Set<string>> {
  const fields = nulFields((await gitIn(repo, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--ignore-submodules=dirty'], { readOnly: true })).stdout);
  const paths = new Set<string>();
  for (let i = 0; i < fields.length; i++) {
    const entry = fields[i];
    paths.add(entry.slice(3));
    if (entry[0] === 'R' || entry[0] === 'C') paths.add(fields[++i]);
  }
  return paths;
}

async function commitTree(repo: string, tree: string, parents: string[], message: string, env?: Record<string, string>): Promise<{ commit: string }> {
  const out = await gitIn(repo, ['-c', 'user.useConfigOnly=true', 'commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-F', '-'], { input: message, env });
  return { commit: out.stdout.trim() };
}

async function defaultMessage(repo: string, method: LandMethod, worktree: WorktreeRecord, head: string, tip: string): Promise<string> {
  if (method === 'merge') return `Merge branch '${worktree.branch}'`;
  const subjects = (await gitIn(repo, ['log', '--reverse', '--format=%s', `${head}..${tip}`])).stdout.trim().split('\n').filter(Boolean);
  return subjects.length === 1 ? subjects[0] : `${worktree.branch}\n\n${subjects.map((s) => `* ${s}`).join('\n')}`;
}

/**
 * A rebase without a working tree: each commit of the branch (merges left out) applied with a 3-way
 * fallback onto the last one in a temporary index, committed with its own author and message.
 */
async function replay(repo: string, head: string, tip: string): Promise<{ commit: string } | { conflict: string[] }> {
  if ((await gitIn(repo, ['merge-base', '--is-ancestor', head, tip], { okCodes: [1] })).code === 0) return { commit: tip };
  const commits = (await gitIn(repo, ['rev-list', '--reverse', '--no-merges', `${head}..${tip}`])).stdout.trim().split('\n').filter(Boolean);
  return withTempIndex(null, async (env) => {
    let onto = head;
    for (const commit of commits) {
      await gitIn(repo, ['read-tree', onto], { env });
      const patch = (await gitIn(repo, ['diff-tree', '-p', '--binary', '--no-renames', '--no-ext-diff', '--no-textconv', '--no-color', `${commit}^`, commit])).stdout;
      if (patch.trim() !== '') {
        try {
          await gitIn(repo, ['apply', '--cached', '--3way', '--whitespace=nowarn', '-'], { env, input: patch });
        } catch (error) {
          if (!(error instanceof GitError)) throw error;
          const unmerged = nulFields((await gitIn(repo, ['ls-files', '-z', '--unmerged', '--format=%(path)'], { env }).catch(() => ({ stdout: '' }))).stdout);
          return { conflict: [...new Set(unmerged)] };
        }
      }
      const tree = (await gitIn(repo, ['write-tree'], { env })).stdout.trim();
      const [name, email, date, ...body] = (await gitIn(repo, ['log', '-1', '--format=%an%x00%ae%x00%ad%x00%B', '--date=raw', commit])).stdout.split('\0');
      onto = (await commitTree(repo, tree, [onto], body.join('\0'), { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_AUTHOR_DATE: date })).commit;
    }
    return { commit: onto };
  });
}
