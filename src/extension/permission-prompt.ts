import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LocalPrompt } from '../agent/permission-broker';
import type { PermissionDecision } from '../protocol';
import { sourceLabel } from '../protocol/sources';

export const PROPOSED_SCHEME = 'remote-assistant-proposed';
const ALLOW = 'Allow';
const ALLOW_SESSION = 'Allow for this Conversation';
const DENY = 'Deny';
const SHOW_DIFF = 'Show Diff';

/** Holds proposed file contents for `vscode.diff` (a read-only virtual document per prompt). */
export class ProposedContent implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private seq = 0;

  add(fileName: string, content: string): vscode.Uri {
    const key = `${++this.seq}/${fileName}`;
    this.contents.set(key, content);
    return vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: `/${key}` });
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.path.slice(1)) ?? '';
  }
}

function describeArguments(args: Record<string, unknown>): string {
  const lines = Object.entries(args).map(([name, value]) => {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    return `${name}: ${text.length > 300 ? `${text.slice(0, 300)}… (${text.length} characters)` : text}`;
  });
  return lines.join('\n') || '(no arguments)';
}

function workspaceUri(p: string): vscode.Uri | undefined {
  if (path.isAbsolute(p)) return vscode.Uri.file(p);
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  return root ? vscode.Uri.joinPath(root, p) : undefined;
}

async function readText(uri: vscode.Uri): Promise<string | undefined> {
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return undefined;
  }
}

/** Opens the diff between the file as it is and as the tool would leave it. */
async function showDiff(tool: string, args: Record<string, unknown>, proposed: ProposedContent): Promise<void> {
  if (typeof args.path !== 'string') return;
  const target = workspaceUri(args.path);
  if (!target) return;
  const current = await readText(target);
  let next: string;
  if (tool === 'write_file') next = String(args.content ?? '');
  else {
    const before = current ?? '';
    const oldString = String(args.old_string ?? '');
    const newString = String(args.new_string ?? '');
    next = args.replace_all === true ? before.split(oldString).join(newString) : before.replace(oldString, () => newString);
  }
  const name = path.basename(args.path);
  const left = current === undefined ? proposed.add(`${name} (new file)`, '') : target;
  await vscode.commands.executeCommand('vscode.diff', left, proposed.add(name, next), `${name}: proposed by ${tool}`);
}

/**
 * Host.permissionPrompt: a modal warning naming the tool and its arguments. For write_file and
 * edit_file, "Show Diff" opens the proposed change, then asks again. When another client answers
 * first (the signal aborts), the prompt resolves at once and its late answer is ignored: VS Code
 * cannot close a modal dialog from code, so it stays until dismissed but no longer decides anything.
 */
export function createPermissionPrompt(proposed: ProposedContent): LocalPrompt {
  return async ({ question }, signal) => {
    const aborted = new Promise<undefined>((resolve) => {
      if (signal.aborted) resolve(undefined);
      signal.addEventListener('abort', () => resolve(undefined), { once: true });
    });
    const canDiff = question.tool === 'write_file' || question.tool === 'edit_file';
    for (;;) {
      if (signal.aborted) return undefined;
      // Deny is the dialog's close button (Escape), so there is no separate Cancel that means the same.
      const buttons: vscode.MessageItem[] = (canDiff ? [ALLOW, ALLOW_SESSION, SHOW_DIFF] : [ALLOW, ALLOW_SESSION]).map((title) => ({ title }));
      buttons.push({ title: DENY, isCloseAffordance: true });
      const shown = vscode.window.showWarningMessage(
        `Remote Assistant wants to run ${question.tool} (asked from ${sourceLabel(question.source)})`,
        { modal: true, detail: `${question.subject ? `${question.subject}\n\n` : ''}${describeArguments(question.arguments)}` },
        ...buttons,
      );
      const picked = await Promise.race([Promise.resolve(shown), aborted]);
      const choice = typeof picked === 'string' ? picked : picked?.title;
      if (signal.aborted) return undefined;
      if (choice === SHOW_DIFF) {
        await showDiff(question.tool, question.arguments, proposed).catch(() => undefined);
        continue;
      }
      const decision: PermissionDecision = choice === ALLOW ? 'allow' : choice === ALLOW_SESSION ? 'allow_session' : 'deny';
      return decision;
    }
  };
}
