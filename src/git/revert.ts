import { ServiceError } from '../protocol/errors';
import type { ChangedFile, ChangeHunk, Changes, WorktreeRecord } from '../protocol/worktrees';
import { changesOf } from './changes';
import { quote } from './diff-parse';
import { gitIn } from './git-in';
import { GitError } from './run-git';

/**
 * revert_changes (docs/protocol.md, "Review and land"): a file back to its base_commit version (deleted
 * when the branch added it; a renamed file back under its old name), or one hunk of it reversed in the
 * worktree, the other hunks untouched. Only a path get_changes lists can be named, so nothing outside
 * the worktree's changes is ever written. Answers the changes after.
 */
export async function revertChanges(worktree: WorktreeRecord, filePath: string, hunkId?: string): Promise<Changes> {
  const before = await changesOf(worktree, { fileChars: Infinity, totalChars: Infinity });
  const file = before.files.find((f) => f.path === filePath);
  if (!file) throw new ServiceError('not_found', `${filePath} has no changes in this conversation's worktree`);
  if (hunkId === undefined || file.status === 'added' || file.status === 'deleted') {
    if (hunkId !== undefined) requireHunk(file, hunkId);
    await revertFile(worktree, file);
  } else {
    await reverseHunk(worktree, file, requireHunk(file, hunkId));
  }
  return changesOf(worktree);
}

function requireHunk(file: ChangedFile, hunkId: string): ChangeHunk {
  const hunk = file.hunks.find((h) => h.id === hunkId);
  if (!hunk) throw new ServiceError('conflict', `hunk ${hunkId} of ${file.path} is not among its changes any more (the file changed since it was listed): get_changes again`);
  return hunk;
}

async function revertFile(worktree: WorktreeRecord, file: ChangedFile): Promise<void> {
  const base = worktree.baseCommit;
  if (file.status === 'added' || file.status === 'renamed') {
    // Not in base under this name: out of the index (if it was added there) and off the disk.
    await gitIn(worktree.path, ['rm', '-q', '-f', '--cached', '--ignore-unmatch', '--', file.path]);
    await gitIn(worktree.path, ['clean', '-q', '-f', '-x', '--', file.path]);
  }
  const restore = file.status === 'renamed' ? file.old_path : file.status === 'added' ? null : file.path;
  if (restore !== null) await gitIn(worktree.path, ['restore', `--source=${base}`, '--staged', '--worktree', '--', restore]);
}

/** `git apply -R` of that one hunk against the worktree's file (not its index: a commit takes everything). */
async function reverseHunk(worktree: WorktreeRecord, file: ChangedFile, hunk: ChangeHunk): Promise<void> {
  const patch = [`diff --git ${quote(`a/${file.path}`)} ${quote(`b/${file.path}`)}`, `--- ${quote(`a/${file.path}`)}`, `+++ ${quote(`b/${file.path}`)}`, hunk.header, ...hunk.lines, ''].join('\n');
  try {
    await gitIn(worktree.path, ['apply', '-R', '--whitespace=nowarn', '-'], { input: patch });
  } catch (error) {
    if (error instanceof GitError) throw new ServiceError('conflict', `hunk ${hunk.id} of ${file.path} no longer applies in reverse (the file changed): get_changes again`);
    throw error;
  }
}
