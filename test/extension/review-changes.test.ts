/**
 * The editor's "Review Changes" and "Open the Worktree in a New Window" (src/extension/review-changes.ts),
 * in plain Node with the vscode double: a real git repository and worktree in a temp dir, the service's
 * get_changes answer standing in for the service (its shape is the protocol's). What each changed file opens
 * in the diff editor: the base's text (git show) read-only on the left, the worktree's file on the right.
 * (The diff editor itself in code-server is not tested here.)
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Changes } from '../../src/protocol/worktrees';
import { addWorktree, makeRepo, writeFiles } from '../helpers/git-repo';
import { installVscodeDouble, testing } from '../helpers/vscode-double';

installVscodeDouble();
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
});

test("Review Changes opens base (git show, read-only) against the worktree's file for each changed file; Open the Worktree opens its folder in a new window", async () => {
  const { reviewChanges, openWorktree } = await import('../../src/extension/review-changes');
  const { ProposedContent } = await import('../../src/extension/permission-prompt');
  const test = await makeRepo({ 'app.txt': 'base text\n', 'gone.txt': 'to delete\n' });
  cleanups.push(test.cleanup);
  const worktree = addWorktree(test, 'c1');
  await writeFiles(worktree.path, { 'app.txt': 'changed\n', 'src/new.txt': 'new\n' });
  await rm(join(worktree.path, 'gone.txt'));
  const file = (path: string, status: Changes['files'][number]['status']) => ({ path, old_path: null, status, additions: 1, deletions: 1, binary: false, hunks: [], cut: false });
  const changes: Changes = {
    conversation_id: 'c1',
    worktree: { branch: worktree.branch, base_branch: 'main', base_commit: worktree.baseCommit, path: worktree.path, state: 'active', changed_files: 3, base_moved: false },
    files: [file('app.txt', 'modified'), file('gone.txt', 'deleted'), file('src/new.txt', 'added')],
    commits: 0,
    uncommitted_files: 3,
  };
  const asked: unknown[] = [];
  const backend = { request: async (frame: unknown) => (asked.push(frame), { status: 'ok', data: changes }) } as never;
  const proposed = new ProposedContent();
  testing.executed.length = 0;

  await reviewChanges(backend, proposed, 'c1');
  assert.deepEqual(asked, [{ type: 'get_changes', conversation_id: 'c1' }]);
  const diffs = testing.executed.filter((e) => e.command === 'vscode.diff');
  assert.equal(diffs.length, 3);
  const [app, gone, added] = diffs.map((d) => d.args as [{ scheme: string; fsPath?: string; path: string }, { scheme: string; fsPath?: string; path: string }, string]);
  const text = (uri: unknown) => proposed.provideTextDocumentContent(uri as never);
  assert.equal(app[0].scheme, 'remote-assistant-proposed');
  assert.equal(text(app[0]), 'base text\n', 'the base as git show gives it');
  assert.equal(app[1].scheme, 'file');
  assert.equal(app[1].path, join(worktree.path, 'app.txt'));
  assert.equal(app[2], `app.txt: base ↔ ${worktree.branch}`);
  assert.equal(text(gone[0]), 'to delete\n');
  assert.equal(gone[1].scheme, 'remote-assistant-proposed', 'a deleted file: an empty document on the right');
  assert.equal(text(gone[1]), '');
  assert.equal(text(added[0]), '', 'an added file: nothing on the left');
  assert.equal(added[1].path, join(worktree.path, 'src', 'new.txt'));

  testing.executed.length = 0;
  await openWorktree(backend, 'c1');
  assert.deepEqual(
    testing.executed.map((e) => [e.command, (e.args[0] as { path: string }).path, e.args[1]]),
    [['vscode.openFolder', worktree.path, { forceNewWindow: true }]],
  );
});
