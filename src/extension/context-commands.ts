import * as vscode from 'vscode';
import type { EditorActiveFileEvent } from '../protocol';
import { CHAT_VIEW_ID, type ChatViewProvider } from './chat-view';
import { activeFileItem, ContextError, selectionItem } from './editor-context';
import { SETTINGS_SECTION } from './settings';

export const ASK_SELECTION_COMMAND = 'remoteAssistant.askSelection';
const ATTACH_ACTIVE_FILE = 'attachActiveFile';
/** Typing in the active file re-sends its chip at most this often. */
const ACTIVE_FILE_DEBOUNCE_MS = 500;

/**
 * The editor's side of the chat input's chips: "Ask Remote Assistant" (context menu, keybinding) puts
 * the selection on the chat as a chip and reveals it; the active file is offered as a chip, kept up to
 * date as the user switches or types, attached or not as `remoteAssistant.attachActiveFile` says.
 */
export function registerContextFeatures(chatView: ChatViewProvider): vscode.Disposable[] {
  const postActiveFile = () => {
    const attach = vscode.workspace.getConfiguration(SETTINGS_SECTION).get<boolean>(ATTACH_ACTIVE_FILE, true);
    chatView.post({ event: 'editor.active_file', item: activeFileItem(), attach } satisfies EditorActiveFileEvent);
  };
  let typing: NodeJS.Timeout | undefined;
  return [
    vscode.commands.registerCommand(ASK_SELECTION_COMMAND, () => askSelection(chatView)),
    vscode.window.onDidChangeActiveTextEditor(() => postActiveFile()),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document !== vscode.window.activeTextEditor?.document) return;
      clearTimeout(typing);
      typing = setTimeout(postActiveFile, ACTIVE_FILE_DEBOUNCE_MS);
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(`${SETTINGS_SECTION}.${ATTACH_ACTIVE_FILE}`)) postActiveFile();
    }),
    { dispose: () => clearTimeout(typing) },
  ].concat(chatView.onDidBecomeReady(postActiveFile));
}

async function askSelection(chatView: ChatViewProvider): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showInformationMessage('Remote Assistant: open a file and select what to ask about.');
    return;
  }
  let item;
  try {
    item = selectionItem(editor);
  } catch (error) {
    if (!(error instanceof ContextError)) throw error;
    void vscode.window.showWarningMessage(`Remote Assistant: ${error.message}.`);
    return;
  }
  await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  chatView.postWhenReady({ event: 'editor.add_context', item });
}
