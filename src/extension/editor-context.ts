import { realpathSync } from 'node:fs';
import { sep } from 'node:path';
import * as vscode from 'vscode';
import { privateFolders } from '../agent/tools/private-folders';
import { resolveWorkspacePath, type WorkspaceRoots } from '../agent/tools/workspace';
import { MAX_CONTEXT_CHARS, type ContextItem, type EditorLookup, type EditorLookupResult } from '../protocol';
import { WorkspaceFiles } from './workspace-files';

/** A chip could not be made (too large, binary, outside the workspace): said to the user as is. */
export class ContextError extends Error {}

/** How a chip names its file: relative to the workspace folder (an untitled document by its name). */
function pathOf(document: vscode.TextDocument): string {
  return document.uri.scheme === 'file' ? vscode.workspace.asRelativePath(document.uri, false) : document.uri.path;
}

function checked(item: ContextItem): ContextItem {
  if (item.text.length > MAX_CONTEXT_CHARS) {
    throw new ContextError(`${item.path} holds ${item.text.length} characters; at most ${MAX_CONTEXT_CHARS} can be attached`);
  }
  if (item.text.includes('\0')) throw new ContextError(`${item.path} is a binary file`);
  return item;
}

/**
 * The editor's selection as a chip (the selected lines, 1-based); with nothing selected, the whole
 * file. A selection that ends at the start of a line does not take that line.
 */
export function selectionItem(editor: vscode.TextEditor): ContextItem {
  const { document, selection } = editor;
  if (selection.isEmpty) return fileItemOf(document);
  const endsAtLineStart = selection.end.character === 0 && selection.end.line > selection.start.line;
  const range = { start_line: selection.start.line + 1, end_line: endsAtLineStart ? selection.end.line : selection.end.line + 1 };
  return checked({ kind: 'selection', path: pathOf(document), range, text: document.getText(selection) });
}

/** A whole document as a chip (its text as the editor holds it, unsaved changes included). */
export function fileItemOf(document: vscode.TextDocument): ContextItem {
  return checked({ kind: 'file', path: pathOf(document), text: document.getText() });
}

/**
 * Whether a document lies in the service's data directory (service.json holds the access token): the
 * file tools never open it, and the active file's chip, attached without asking, never offers it.
 */
function isPrivate(document: vscode.TextDocument): boolean {
  if (document.uri.scheme !== 'file') return false;
  let file = document.uri.fsPath;
  try {
    file = realpathSync(file);
  } catch {
    // not on disk (yet): judged by its path
  }
  return [...privateFolders()].some((folder) => file === folder || file.startsWith(folder + sep));
}

/** Documents that are the user's: files, and new ones not saved yet (not a diff's side, a git or output view). */
const USER_DOCUMENT_SCHEMES: ReadonlySet<string> = new Set(['file', 'untitled']);

/** The active editor's file as a chip; null when there is none or it cannot be attached. */
export function activeFileItem(): ContextItem | null {
  const editor = vscode.window.activeTextEditor;
  if (!editor || !USER_DOCUMENT_SCHEMES.has(editor.document.uri.scheme) || isPrivate(editor.document)) return null;
  try {
    return fileItemOf(editor.document);
  } catch {
    return null;
  }
}

/**
 * Answers the chat view's `#file` questions: matching workspace files, or one file as a chip. A path
 * is confined as the file tools' are (inside the workspace, no link out, never the service's data).
 */
export function createLookup(roots: WorkspaceRoots): (lookup: EditorLookup) => Promise<EditorLookupResult> {
  const files = new WorkspaceFiles();
  return async (lookup) => {
    try {
      if ('files' in lookup) return { files: await files.matching(String(lookup.files)) };
      const resolved = await resolveWorkspacePath(roots(), String(lookup.file));
      let document: vscode.TextDocument;
      try {
        document = await vscode.workspace.openTextDocument(vscode.Uri.file(resolved.path));
      } catch {
        throw new ContextError(`cannot open ${lookup.file} as text`);
      }
      return { item: fileItemOf(document) };
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  };
}
