import { copyFile, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ServiceError } from '../protocol/errors';
import type { ChangedFile, Changes, WorktreeRecord } from '../protocol/worktrees';
import { DEFAULT_DIFF_LIMITS, parseGitDiff, type DiffLimits } from './diff-parse';
import { nulFields, gitIn, type ReviewGitOptions } from './git-in';
import { untrackedDiff } from './untracked-diff';

/**
 * The diff flags of every review read: git's own diff, no driver the repository's config or attributes
 * name, and a submodule (a gitlink) compared by its commit only: to see whether its files changed git
 * runs `git status` inside it, under that repository's own config (its filters: our guards name only
 * the drivers of the repository we run in).
 */
export const DIFF_FLAGS = ['--no-color', '--no-ext-diff', '--no-textconv', '-M', '--ignore-submodules=dirty'] as const;

/**
 * A conversation's changes against its base_commit (docs/protocol.md, "Review and land"): what is
 * committed on its branch and what is not yet, untracked files included, as one list.
 *
 * One `git diff <base>` reads the tracked files (worktree against base), untracked files are added as
 * git would show them (untracked-diff.ts), and which files hold uncommitted work is told by comparing
 * blob ids (the diff's `index` lines against HEAD's, from a tree-to-tree diff that reads no file), so
 * the worktree is scanned once, by git, and its index is never written (the agent's own `git` may hold
 * its lock). Every git process started costs the service's event loop a fork (5-20 ms on a loaded
 * machine, more than git's own work for the small reads), so the patch, the slow read, is started first
 * (after the config's filters, run-git.ts) and the others once it runs; HEAD's commit tells whether there
 * are commits to count and compare at all (none until commit_changes: two processes fewer). The untracked
 * files are read while git still diffs.
 */
export async function changesOf(worktree: WorktreeRecord, limits: DiffLimits = DEFAULT_DIFF_LIMITS): Promise<Changes> {
  await requireFolder(worktree);
  const base = worktree.baseCommit;
  // Reads only: git's diff would otherwise refresh and write the index it read, taking its lock from
  // a commit (or the agent's own git) running at the same time.
  const plumbing = { readOnly: true, readsNoContent: true };
  let patchStarted!: () => void;
  const started = new Promise<void>((resolve) => (patchStarted = resolve));
  const patch = gitIn(worktree.path, ['diff', ...DIFF_FLAGS, '--full-index', base], {
    readOnly: true,
    allowOverflow: true,
    cutBefore: 'diff --git ',
    ...(limits.readBytes === undefined ? {} : { maxBytes: limits.readBytes }),
    onStart: patchStarted,
  });
  void patch.catch(() => undefined).finally(patchStarted);
  const [diff, fresh, { baseTip, commits, committed }] = await Promise.all([
    patch,
    started.then(() => gitIn(worktree.path, ['ls-files', '-z', '--others', '--exclude-standard'], plumbing)).then((out) => untrackedDiff(worktree.path, nulFields(out.stdout), limits.readBytes)),
    started.then(() => branchOf(worktree)),
  ]);
  // A diff past what git may answer (one file rewritten whole can be 100s of MB): the files read whole
  // are shown (the answer ends before the first file it did not hold whole), the rest listed from a
  // summary with their counts, cut.
  const { files, newBlobs } = parseGitDiff(diff.stdout + fresh.text, limits);
  if (diff.overflowed) files.push(...(await filesPastTheCut(worktree.path, base, new Set(files.map((f) => f.path)))));
  files.push(...fresh.counted);
  return {
    conversation_id: worktree.conversationId,
    worktree: {
      branch: worktree.branch,
      base_branch: worktree.baseBranch,
      base_commit: base,
      path: worktree.path,
      state: worktree.state,
      changed_files: files.length,
      base_moved: baseTip !== base,
    },
    files,
    commits,
    uncommitted_files: uncommittedCount(files, newBlobs, committed),
  };
}

/**
 * What list_conversations shows of a worktree without reading any patch: how many files differ from
 * the base commit, counted as get_changes counts its files (a rename is one file, untracked files
 * included), and whether the base branch moved on. Three reads at once.
 */
export async function changeStatsOf(worktree: WorktreeRecord): Promise<{ changedFiles: number; baseMoved: boolean }> {
  const [changed, untracked, baseTip] = await Promise.all([
    gitIn(worktree.path, ['diff', ...DIFF_FLAGS, '--name-only', '-z', worktree.baseCommit, '--'], { readOnly: true }),
    gitIn(worktree.path, ['ls-files', '-z', '--others', '--exclude-standard'], { readOnly: true, readsNoContent: true }),
    baseTipOf(worktree),
  ]);
  return { changedFiles: new Set([...nulFields(changed.stdout), ...nulFields(untracked.stdout)]).size, baseMoved: baseTip !== worktree.baseCommit };
}

/** The base branch's commit now (the base commit itself for a worktree made from a detached HEAD): it moved when they differ. */
async function baseTipOf(worktree: WorktreeRecord): Promise<string> {
  if (!worktree.baseBranch) return worktree.baseCommit;
  const out = await gitIn(worktree.repository, ['rev-parse', '--verify', '-q', `refs/heads/${worktree.baseBranch}`], { readOnly: true, readsNoContent: true, okCodes: [1] });
  return out.stdout.trim();
}

/**
 * The branch beside the patch: HEAD and the base branch's tip in one rev-parse; only when HEAD has
 * moved from the base commit, its commits counted and HEAD's blob of each file they changed (a diff of
 * two trees: no file read).
 */
async function branchOf(worktree: WorktreeRecord): Promise<{ baseTip: string; commits: number; committed: Map<string, string> }> {
  const plumbing = { readOnly: true, readsNoContent: true };
  const base = worktree.baseCommit;
  // `--` ends the revisions; exit 128 when the base branch is gone (HEAD is printed before).
  const tips = await gitIn(worktree.path, ['rev-parse', 'HEAD', ...(worktree.baseBranch ? [`refs/heads/${worktree.baseBranch}`] : []), '--'], { ...plumbing, okCodes: [128] });
  const [head = '', branchTip = ''] = tips.stdout.split('\n');
  const baseTip = worktree.baseBranch ? branchTip.replace(/^--$/, '') : base;
  if (head === base) return { baseTip, commits: 0, committed: new Map() };
  const [commits, committed] = await Promise.all([
    gitIn(worktree.path, ['rev-list', '--count', `${base}..HEAD`], plumbing).then((out) => Number(out.stdout.trim())),
    gitIn(worktree.path, ['diff', '--raw', '-z', '--no-renames', '--no-abbrev', base, 'HEAD'], plumbing).then((out) => committedBlobs(out.stdout)),
  ]);
  return { baseTip, commits, committed };
}

const STATUS_LETTERS: Record<string, ChangedFile['status']> = { A: 'added', D: 'deleted', R: 'renamed' };

/**
 * The tracked files a cut diff did not reach, from git's summaries (names, statuses, `+`/`-` counts:
 * small whatever the files' size), each `cut` with no hunks. Their blobs are not known, so each counts
 * as uncommitted.
 */
async function filesPastTheCut(folder: string, base: string, shown: ReadonlySet<string>): Promise<ChangedFile[]> {
  const read = { readOnly: true };
  const [statuses, counts] = await Promise.all([
    gitIn(folder, ['diff', ...DIFF_FLAGS, '--name-status', '-z', base], read).then((out) => nulFields(out.stdout)),
    gitIn(folder, ['diff', ...DIFF_FLAGS, '--numstat', '-z', base], read).then((out) => nulFields(out.stdout)),
  ]);
  const lineCounts = new Map<string, [string, string]>();
  for (let i = 0; i < counts.length; i++) {
    const [additions, deletions, name] = counts[i].split('\t');
    // A rename's entry is `+\t-\t` and then its old and new names as fields of their own.
    const path = name === '' ? counts[(i += 2)] : name;
    lineCounts.set(path, [additions, deletions]);
  }
  const files: ChangedFile[] = [];
  for (let i = 0; i < statuses.length; i++) {
    const letter = statuses[i][0];
    const oldPath = letter === 'R' || letter === 'C' ? statuses[++i] : null;
    const path = statuses[++i];
    if (shown.has(path)) continue;
    const [additions, deletions] = lineCounts.get(path) ?? ['0', '0'];
    const binary = additions === '-';
    files.push({
      path,
      old_path: letter === 'R' ? oldPath : null,
      status: STATUS_LETTERS[letter] ?? 'modified',
      additions: binary ? 0 : Number(additions),
      deletions: binary ? 0 : Number(deletions),
      binary,
      hunks: [],
      cut: true,
    });
  }
  return files;
}

/** Each path the branch's commits changed, with its blob at HEAD (all zeros: deleted there). */
function committedBlobs(raw: string): Map<string, string> {
  const fields = nulFields(raw);
  const blobs = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) blobs.set(fields[i + 1], fields[i].split(' ')[3]);
  return blobs;
}

const ABSENT = /^0+$/;

/**
 * Files whose worktree version is not HEAD's: a changed file the commits did not touch, one whose blob
 * differs from HEAD's, and a file the commits changed that the worktree has back as in base.
 */
function uncommittedCount(files: readonly ChangedFile[], newBlobs: Map<string, string | null>, committed: Map<string, string>): number {
  let count = 0;
  const seen = new Set<string>();
  const differs = (name: string, blob: string | null): boolean => {
    seen.add(name);
    const atHead = committed.get(name);
    if (atHead === undefined || blob === null) return true;
    return ABSENT.test(atHead) ? !ABSENT.test(blob) : atHead !== blob;
  };
  for (const file of files) {
    const here = differs(file.path, newBlobs.get(file.path) ?? null);
    const before = file.old_path !== null && differs(file.old_path, '0');
    if (here || before) count++;
  }
  for (const name of committed.keys()) if (!seen.has(name)) count++;
  return count;
}

/** The worktree's folder must still be there: deleted outside the service, it is a clear answer, not git's (naming the branch: a webhook account may ask, and the machine's folders are not its to know). */
export async function requireFolder(worktree: WorktreeRecord): Promise<void> {
  const found = await stat(worktree.path).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!found) throw new ServiceError('conflict', `the folder of the worktree of ${worktree.branch} is gone (deleted outside the service): discard_changes removes what is left of it`);
}

/** GIT_INDEX_FILE of a temporary index: a copy of `copyOf` (empty when null or absent), removed after `work`. */
export async function withTempIndex<T>(copyOf: string | null, work: (env: NonNullable<ReviewGitOptions['env']>) => Promise<T>): Promise<T> {
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
