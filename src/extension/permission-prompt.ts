import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LocalPrompt } from '../agent/permission-broker';
import type { PermissionQuestion } from '../agent/permissions';
import { describeArguments } from '../agent/tools/preview';
import type { ToolPreview } from '../agent/tools/types';
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

/** The modal's detail: what the tool says the call would do, and the arguments where that is the diff. */
function describeCall(question: PermissionQuestion, preview: ToolPreview | undefined): string {
  const subject = question.subject ? `${question.subject}\n\n` : '';
  if (preview?.kind === 'command') {
    const warnings = preview.warnings.map((w) => `\n\nWarning: ${w}`).join('');
    return `${preview.command}\n\nin ${preview.cwd}, for at most ${preview.timeout_seconds} s${warnings}`;
  }
  if (preview?.kind === 'arguments') return `${subject}${preview.text}`;
  const failure = preview?.kind === 'error' ? `\n\nThis call would fail: ${preview.message}` : '';
  return `${subject}${describeArguments(question.arguments)}${failure}`;
}

/** Opens the diff between the file as it is and as the tool's preview says the write leaves it. */
async function showDiff(tool: string, preview: Extract<ToolPreview, { kind: 'diff' }>, proposed: ProposedContent): Promise<void> {
  const name = path.basename(preview.file);
  const left = preview.new_file ? proposed.add(`${name} (new file)`, '') : vscode.Uri.file(preview.file);
  await vscode.commands.executeCommand('vscode.diff', left, proposed.add(name, preview.proposed), `${name}: proposed by ${tool}`);
}

/**
 * Host.permissionPrompt: a modal warning naming the tool and what the call would do (the tool's
 * preview). For a diff preview (write_file, edit_file), "Show Diff" opens the change exactly as the
 * tool would write it, then asks again. When another client answers first (the signal aborts), the
 * prompt resolves at once and its late answer is ignored: VS Code cannot close a modal dialog from
 * code, so it stays until dismissed but no longer decides anything.
 */
export function createPermissionPrompt(proposed: ProposedContent): LocalPrompt {
  return async ({ question, preview }, signal) => {
    const aborted = new Promise<undefined>((resolve) => {
      if (signal.aborted) resolve(undefined);
      signal.addEventListener('abort', () => resolve(undefined), { once: true });
    });
    const diff = preview?.kind === 'diff' ? preview : undefined;
    for (;;) {
      if (signal.aborted) return undefined;
      // Deny is the dialog's close button (Escape), so there is no separate Cancel that means the same.
      const buttons: vscode.MessageItem[] = (diff ? [ALLOW, ALLOW_SESSION, SHOW_DIFF] : [ALLOW, ALLOW_SESSION]).map((title) => ({ title }));
      buttons.push({ title: DENY, isCloseAffordance: true });
      const shown = vscode.window.showWarningMessage(
        `Remote Assistant wants to run ${question.tool} (asked from ${sourceLabel(question.source)})`,
        { modal: true, detail: describeCall(question, preview) },
        ...buttons,
      );
      const picked = await Promise.race([Promise.resolve(shown), aborted]);
      const choice = typeof picked === 'string' ? picked : picked?.title;
      if (signal.aborted) return undefined;
      if (choice === SHOW_DIFF && diff) {
        await showDiff(question.tool, diff, proposed).catch(() => undefined);
        continue;
      }
      const decision: PermissionDecision = choice === ALLOW ? 'allow' : choice === ALLOW_SESSION ? 'allow_session' : 'deny';
      return decision;
    }
  };
}
