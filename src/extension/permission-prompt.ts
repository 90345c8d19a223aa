import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { shortened } from '../protocol/code-points';
import type { PermissionDecision, PermissionRequest } from '../protocol';
import { applyUnifiedDiff } from './apply-diff';
import type { Backend } from './backend';
import type { PendingPermissions } from './pending-permissions';

export const PROPOSED_SCHEME = 'remote-assistant-proposed';

/** Commands behind the notification's links (not in the palette: they take a request id). */
export const PROMPT_COMMANDS = {
  answer: 'remoteAssistant.answerPermission',
  showInChat: 'remoteAssistant.showPermissionInChat',
  showDiff: 'remoteAssistant.showPermissionDiff',
} as const;

/** Holds proposed file contents for `vscode.diff` (a read-only virtual document per Show Diff). */
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

/**
 * `[label](command:id?args)`: a link a notification renders (VS Code opens it with commands allowed).
 * The target may hold no `)` or space, so those are escaped too.
 */
export function commandLink(label: string, command: string, args: unknown[]): string {
  const query = encodeURIComponent(JSON.stringify(args)).replace(/[()']/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `[${label}](command:${command}?${query})`;
}

/** Text from the request (a command line, a path) can never form a link of its own: `](` is broken up. */
function plain(text: string, max = 160): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return shortened(line, max).replace(/\]\(/g, '] (');
}

/** What the call would do, in one line: the command, the file and its change, or the arguments. */
export function describeRequest(request: PermissionRequest): string {
  const preview = request.preview;
  if (preview?.kind === 'command') return `${plain(preview.command)} (in ${plain(preview.cwd, 60)})${preview.warnings.length ? ` ⚠ ${plain(preview.warnings[0], 100)}` : ''}`;
  if (preview?.kind === 'diff') {
    const lines = preview.diff.split('\n');
    const added = lines.filter((l) => l.startsWith('+') && !l.startsWith('+++')).length;
    const removed = lines.filter((l) => l.startsWith('-') && !l.startsWith('---')).length;
    return `${plain(preview.path)}${preview.new_file ? ' (new file)' : ''} +${added} −${removed}`;
  }
  if (preview?.kind === 'error') return `would fail: ${plain(preview.message)}`;
  if (preview?.kind === 'arguments') return plain(preview.text);
  return plain(JSON.stringify(request.arguments));
}

/**
 * The editor's own prompt, in one place. While the chat view is visible its card is the prompt and
 * nothing else shows. Otherwise a request of a chat this window runs gets a progress notification:
 * unlike a modal or an information message it closes itself when its task settles, i.e. when the
 * request is answered anywhere (phone, another window, the card) or expires, and its message offers
 * Allow / Allow for Conversation / Deny / Show in Chat (/ Show Diff) as command links, so it answers
 * without a modal taking the editor over; its Cancel button denies. Requests asked from elsewhere (a phone, another window, a
 * webhook) get no notification: whoever asked is answering there, and the status bar counts them.
 */
export class EditorPrompts implements vscode.Disposable {
  /** This window's own requests still waiting, and the close function of each one's notification. */
  private readonly own = new Map<string, PermissionRequest>();
  private readonly toasts = new Map<string, () => void>();
  private readonly onResolved = (requestId: string) => this.forget(requestId);

  constructor(
    private readonly pending: PendingPermissions,
    private readonly viewVisible: () => boolean,
    private readonly answer: (requestId: string, decision: PermissionDecision) => Promise<void>,
  ) {
    pending.on('resolved', this.onResolved);
  }

  /** A request of a chat the view in this window runs. */
  ownRequest(request: PermissionRequest): void {
    // An attached window hears it on two sockets: the answer may have come on the other one first.
    if (this.pending.wasResolved(request.request_id)) return;
    this.own.set(request.request_id, request);
    this.refresh();
  }

  /** Shows what must show, closes what must go: call when the view is shown or hidden. */
  refresh(): void {
    if (this.viewVisible()) {
      for (const id of [...this.toasts.keys()]) this.close(id);
      return;
    }
    for (const request of this.own.values()) if (!this.toasts.has(request.request_id)) this.show(request);
  }

  /** Another backend: what the old one asked is not answerable here any more. */
  reset(): void {
    for (const id of [...this.own.keys()]) this.forget(id);
  }

  private forget(requestId: string): void {
    this.own.delete(requestId);
    this.close(requestId);
  }

  private close(requestId: string): void {
    this.toasts.get(requestId)?.();
    this.toasts.delete(requestId);
  }

  private show(request: PermissionRequest): void {
    let close!: () => void;
    const closed = new Promise<void>((resolve) => (close = resolve));
    this.toasts.set(request.request_id, close);
    const id = request.request_id;
    const links = [
      commandLink('Allow', PROMPT_COMMANDS.answer, [id, 'allow']),
      commandLink('Allow for Conversation', PROMPT_COMMANDS.answer, [id, 'allow_conversation']),
      commandLink('Deny', PROMPT_COMMANDS.answer, [id, 'deny']),
      commandLink('Show in Chat', PROMPT_COMMANDS.showInChat, [id]),
      ...(request.preview?.kind === 'diff' ? [commandLink('Show Diff', PROMPT_COMMANDS.showDiff, [id])] : []),
    ];
    // Cancellable: a notification with a button opens expanded, so the details and links show (a
    // collapsed one is a single cut line). Cancel (or closing it) denies, as the old modal's close did:
    // dismissing a question about running something never lets it run.
    void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Remote Assistant asks to run ${request.tool}`, cancellable: true }, async (progress, token) => {
      progress.report({ message: `${describeRequest(request)} — ${links.join(' · ')}` });
      const cancelled = token.onCancellationRequested(() => void this.answer(id, 'deny').catch(() => undefined));
      await closed;
      cancelled.dispose();
    });
  }

  dispose(): void {
    this.pending.off('resolved', this.onResolved);
    for (const id of [...this.toasts.keys()]) this.close(id);
    this.own.clear();
  }
}

/** Answers through this window's backend, as any client would; a late answer says who was first. */
export async function answerRequest(backend: Backend | undefined, requestId: string, decision: PermissionDecision): Promise<void> {
  if (!backend) throw new Error('the service is not running');
  const answer = await backend.request({ type: 'permission_response', request_id: requestId, decision });
  if (answer.status === 'ok') return;
  // Gone (answered elsewhere and forgotten): nothing left to decide, nothing to say.
  if (answer.code === 'not_found') return;
  void vscode.window.showInformationMessage(`Remote Assistant: ${answer.error}`);
}

/**
 * Opens VS Code's diff of a waiting request's file change: the file as it is on disk and the
 * proposed text, rebuilt by applying the request's diff preview to it (the one place the editor
 * needs the full text; the wire carries the diff only). `roots`: where the service's file tools work.
 */
export async function showRequestDiff(request: PermissionRequest, roots: string[], proposed: ProposedContent): Promise<void> {
  const preview = request.preview;
  if (preview?.kind !== 'diff') throw new Error(`${request.tool} changes no file: there is no diff to show`);
  if (preview.truncated) throw new Error(`the change to ${preview.path} is too long to show (its diff was cut)`);
  const name = path.basename(preview.path);
  const title = `${name}: proposed by ${request.tool}`;
  if (preview.new_file) {
    await vscode.commands.executeCommand('vscode.diff', proposed.add(`${name} (new file)`, ''), proposed.add(name, applyUnifiedDiff('', preview.diff)), title);
    return;
  }
  const file = path.isAbsolute(preview.path) ? preview.path : await firstExisting(roots.map((root) => path.join(root, preview.path)));
  if (!file) throw new Error(`${preview.path} is not in the workspace folders`);
  let after: string;
  try {
    after = applyUnifiedDiff(await readFile(file, 'utf8'), preview.diff);
  } catch (error) {
    throw new Error(`cannot show the change to ${preview.path}: ${(error as Error).message}`);
  }
  await vscode.commands.executeCommand('vscode.diff', vscode.Uri.file(file), proposed.add(name, after), title);
}

async function firstExisting(files: string[]): Promise<string | undefined> {
  for (const file of files) {
    if (
      await readFile(file).then(
        () => true,
        () => false,
      )
    )
      return file;
  }
  return undefined;
}
