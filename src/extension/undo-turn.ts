import { readFile } from 'node:fs/promises';
import path from 'node:path';
import * as vscode from 'vscode';
import { firstCodePoints } from '../protocol/code-points';
import type { UndoFile, UndoTurnResult } from '../protocol';
import { applyUnifiedDiff } from './apply-diff';
import { call } from './backend';
import type { Requester } from './connection-info';
import type { ProposedContent } from './permission-prompt';

/**
 * Undoing a turn in the editor (docs/protocol.md, "Undoing a turn"): the palette's "Undo a Turn" (pick a
 * conversation and one of its turns that changed files, see each restore in VS Code's diff editor,
 * confirm) and the three-way view of a file changed since the turn (the chat view's `showUndoThreeWay`):
 * before the turn <-> now, and the turn's result <-> now, in two diff editors.
 */

function requireBackend(backend: Requester | undefined): Requester {
  if (!backend) throw new Error('the service is not running in any window');
  return backend;
}

/** The file now in the first workspace folder holding it; undefined when none does. */
async function fileNow(roots: string[], relative: string): Promise<string | undefined> {
  for (const root of roots) {
    const full = path.join(root, relative);
    if (
      await readFile(full).then(
        () => true,
        () => false,
      )
    )
      return full;
  }
  return undefined;
}

/** The file as it is now: the real file, or an empty document named "(no file)". */
async function nowUri(roots: string[], relative: string, proposed: ProposedContent): Promise<vscode.Uri> {
  const full = await fileNow(roots, relative);
  return full ? vscode.Uri.file(full) : proposed.add(`${path.basename(relative)} (no file now)`, '');
}

export async function showUndoThreeWay(backend: Requester | undefined, argument: string, roots: string[], proposed: ProposedContent): Promise<void> {
  const { conversation_id, message_id, path: relative } = JSON.parse(argument) as { conversation_id: string; message_id: string; path: string };
  const preview = await call(requireBackend(backend), { type: 'undo_turn', conversation_id, message_id });
  const file = preview.files.find((f) => f.path === relative);
  if (!file || file.status !== 'changed_since') throw new Error(`${relative} has not changed since that turn`);
  const name = path.basename(relative);
  const now = await nowUri(roots, relative, proposed);
  await vscode.commands.executeCommand('vscode.diff', proposed.add(`${name} (before the turn)`, file.before_text ?? ''), now, `${name}: before the turn ↔ now`);
  await vscode.commands.executeCommand('vscode.diff', proposed.add(`${name} (the turn's result)`, file.after_text ?? ''), now, `${name}: the turn's result ↔ now`);
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const capitalized = (text: string) => text.replace(/\b\w/g, (c) => c.toUpperCase());

export async function undoTurnFromPalette(backend: Requester | undefined, roots: string[], proposed: ProposedContent): Promise<void> {
  const requester = requireBackend(backend);
  const { conversations } = await call(requester, { type: 'list_conversations', limit: 100 });
  const conversation = await vscode.window.showQuickPick(
    conversations.map((c) => ({ label: c.title, description: c.source, id: c.id })),
    { title: 'Remote Assistant: undo a turn of which conversation?' },
  );
  if (!conversation) return;
  const { turns } = await call(requester, { type: 'list_turn_changes', conversation_id: conversation.id });
  const { messages } = await call(requester, { type: 'get_messages', conversation_id: conversation.id, limit: 500 });
  const textOf = new Map(messages.map((m) => [m.id, firstCodePoints(m.content.split('\n')[0], 100)]));
  const undoable = turns.filter((t) => t.files > 0 && !t.undone).reverse();
  if (undoable.length === 0) {
    void vscode.window.showInformationMessage('Remote Assistant: no turn of this conversation changed files that are not undone yet.');
    return;
  }
  const turn = await vscode.window.showQuickPick(
    undoable.map((t) => ({
      label: textOf.get(t.turn_id) ?? t.turn_id,
      description: `${plural(t.files, 'file')}${t.not_reversible ? ` · ${t.not_reversible} not reversible` : ''}`,
      detail: t.message_id ? textOf.get(t.message_id) : 'no reply',
      turn: t,
    })),
    { title: 'Remote Assistant: undo which turn? (newest first)' },
  );
  if (!turn) return;
  const preview = await call(requester, { type: 'undo_turn', conversation_id: conversation.id, message_id: turn.turn.turn_id });
  const restorable = preview.files.filter((f) => f.status === 'will_restore');
  for (const file of restorable) await showRestore(file, roots, proposed);
  const changed = preview.files.filter((f) => f.status === 'changed_since');
  if (changed.length > 0) {
    void vscode.window.showInformationMessage(`Remote Assistant: changed since the turn, left as they are: ${changed.map((f) => f.path).join(', ')} (the chat view compares before / turn / now).`);
  }
  if (restorable.length === 0) {
    void vscode.window.showInformationMessage('Remote Assistant: nothing of this turn can be restored.');
    return;
  }
  const confirm = `Restore ${capitalized(plural(restorable.length, 'file'))}`;
  const notReversible = preview.not_reversible.length ? `\n\nNot reversible (their effects stay): ${preview.not_reversible.map((n) => n.detail).join('; ')}` : '';
  const answer = await vscode.window.showWarningMessage(
    `Undo this turn? ${restorable.map((f) => `${f.path} (${f.action === 'delete' ? 'delete' : 'restore'})`).join(', ')}${notReversible}`,
    { modal: true },
    confirm,
  );
  if (answer !== confirm) return;
  const done = await call(requester, { type: 'undo_turn', conversation_id: conversation.id, message_id: turn.turn.turn_id, confirm: true });
  void vscode.window.showInformationMessage(`Remote Assistant: ${outcomes(done)}`);
}

/** The diff editor of one restore: the file now <-> what undo leaves. */
async function showRestore(file: UndoFile, roots: string[], proposed: ProposedContent): Promise<void> {
  const name = path.basename(file.path);
  const full = await fileNow(roots, file.path);
  if (!full) return;
  const restored = file.action === 'delete' ? '' : await restoredText(file, full);
  await vscode.commands.executeCommand('vscode.diff', vscode.Uri.file(full), proposed.add(`${name} (after undo)`, restored), `${name}: now ↔ after undo`);
}

/** The preview's diff (now -> restored) applied to the file now; a binary file's note when it is not text. */
async function restoredText(file: UndoFile, full: string): Promise<string> {
  try {
    return applyUnifiedDiff(await readFile(full, 'utf8'), file.diff);
  } catch {
    return file.diff;
  }
}

function outcomes(result: UndoTurnResult): string {
  return result.files.map((f) => `${f.path} ${f.outcome === 'skipped' ? 'left as it is' : f.outcome}${f.error ? ` (${f.error})` : ''}`).join(', ');
}
