import path from 'node:path';
import * as vscode from 'vscode';
import type { Changes, ChangedFile } from '../protocol/worktrees';
import { gitOutput } from '../git/run-git';
import { call } from './backend';
import type { Requester } from './connection-info';
import type { ProposedContent } from './permission-prompt';

/**
 * The editor's review of a conversation that works in its own git worktree (issue 24; docs/protocol.md
 * "Review and land"): "Review Changes" opens each changed file in VS Code's diff editor, the base (as
 * `git show <base_commit>:<path>` gives it, a read-only document) against the file in the worktree; "Open
 * the Worktree in a New Window" opens its folder. Both ask which conversation when not told.
 */

export interface DiffPair {
  left: vscode.Uri;
  right: vscode.Uri;
  title: string;
}

/** The file as the base commit has it (git, argument array, in the worktree: it shares the repository's objects). */
export type BaseReader = (worktree: string, commit: string, file: string) => Promise<string>;

const readBase: BaseReader = (worktree, commit, file) => gitOutput(['show', `${commit}:${file}`], { cwd: worktree, readOnly: true });

/** What each changed file opens: base (left, read-only) and worktree (right; an empty document for a deleted file). */
export async function diffPairs(changes: Changes, proposed: ProposedContent, base: BaseReader = readBase): Promise<DiffPair[]> {
  const { path: root, base_commit } = changes.worktree;
  return Promise.all(
    changes.files.map(async (file: ChangedFile) => {
      const name = path.basename(file.path);
      const before = file.status === 'added' ? '' : await base(root, base_commit, file.old_path ?? file.path);
      const left = proposed.add(`${name} (${base_commit.slice(0, 7)})`, before);
      const right = file.status === 'deleted' ? proposed.add(`${name} (deleted)`, '') : vscode.Uri.file(path.join(root, ...file.path.split('/')));
      return { left, right, title: `${file.path}: base ↔ ${changes.worktree.branch}` };
    }),
  );
}

function requireBackend(backend: Requester | undefined): Requester {
  if (!backend) throw new Error('the service is not running in any window');
  return backend;
}

/** The conversation to act on: `conversationId` when given (the chat view's menu), else picked among those with an active worktree. */
async function worktreeConversation(requester: Requester, conversationId: string | undefined, title: string): Promise<string | undefined> {
  if (conversationId) return conversationId;
  const { conversations } = await call(requester, { type: 'list_conversations', limit: 100 });
  const withWorktree = conversations.filter((c) => c.worktree?.state === 'active');
  if (withWorktree.length === 0) throw new Error('no conversation works in its own worktree');
  const picked = await vscode.window.showQuickPick(
    withWorktree.map((c) => ({ label: c.title, description: `${c.worktree!.branch} · ${c.worktree!.changed_files} changed`, id: c.id })),
    { title },
  );
  return picked?.id;
}

export async function reviewChanges(backend: Requester | undefined, proposed: ProposedContent, conversationId?: string): Promise<void> {
  const requester = requireBackend(backend);
  const id = await worktreeConversation(requester, conversationId, 'Remote Assistant: review the changes of which conversation?');
  if (!id) return;
  const changes = await call(requester, { type: 'get_changes', conversation_id: id });
  if (changes.files.length === 0) {
    void vscode.window.showInformationMessage(`Remote Assistant: ${changes.worktree.branch} has no changes against its base.`);
    return;
  }
  for (const pair of await diffPairs(changes, proposed)) await vscode.commands.executeCommand('vscode.diff', pair.left, pair.right, pair.title, { preview: false });
}

export async function openWorktree(backend: Requester | undefined, conversationId?: string): Promise<void> {
  const requester = requireBackend(backend);
  const id = await worktreeConversation(requester, conversationId, 'Remote Assistant: open the worktree of which conversation?');
  if (!id) return;
  const { worktree } = await call(requester, { type: 'get_changes', conversation_id: id });
  await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(worktree.path), { forceNewWindow: true });
}
