import * as vscode from 'vscode';
import { defineTool } from '../agent/tools/define-tool';
import { ToolError, type ToolSource } from '../agent/tools/types';
import { resolveWorkspacePath, type WorkspaceRoots } from '../agent/tools/workspace';

/**
 * A path the model gave, confined like the file tools' (resolveWorkspacePath: inside the workspace,
 * no link leading out, never the service's data directory): open_file selects what it reveals and
 * get_selection returns the selection, so together they read whatever file open_file may open.
 */
async function resolveUri(roots: WorkspaceRoots, p: string): Promise<vscode.Uri> {
  return vscode.Uri.file((await resolveWorkspacePath(roots(), p)).path);
}

function relative(uri: vscode.Uri): string {
  return vscode.workspace.asRelativePath(uri, false);
}

const severityName = ['error', 'warning', 'info', 'hint'];

/**
 * Tools only the editor has: its diagnostics, opening a file at a range, the user's selection. (run_command
 * in a visible terminal is the service's, agent/tools/terminal-run-command.ts, over the host's runner.)
 */
export function createEditorToolSource(roots: WorkspaceRoots): ToolSource {
  const tools = [
    defineTool({
      name: 'get_diagnostics',
      description: "The editor's problems (errors, warnings) for one file, or for every open file when path is left out.",
      params: { path: { type: 'string', optional: true, description: 'File path, relative to the workspace folder.' } },
      async run(args) {
        const uri = args.path ? await resolveUri(roots, args.path) : undefined;
        const entries: [vscode.Uri, readonly vscode.Diagnostic[]][] = uri ? [[uri, vscode.languages.getDiagnostics(uri)]] : vscode.languages.getDiagnostics();
        const lines: string[] = [];
        for (const [uri, diagnostics] of entries) {
          for (const d of diagnostics) {
            lines.push(`${relative(uri)}:${d.range.start.line + 1}:${d.range.start.character + 1} ${severityName[d.severity] ?? 'info'}: ${d.message}${d.source ? ` (${d.source})` : ''}`);
          }
        }
        return { content: lines.length > 0 ? lines.join('\n') : 'no problems' };
      },
    }),
    defineTool({
      name: 'open_file',
      description: 'Open a file in the editor for the user, optionally revealing and selecting a line range (1-based, inclusive).',
      params: {
        path: { type: 'string', description: 'File path, relative to the workspace folder.' },
        start_line: { type: 'integer', optional: true, description: 'First line to reveal (1-based).' },
        end_line: { type: 'integer', optional: true, description: 'Last line to reveal (1-based).' },
      },
      async run(args) {
        const uri = await resolveUri(roots, args.path);
        let document: vscode.TextDocument;
        try {
          document = await vscode.workspace.openTextDocument(uri);
        } catch {
          throw new ToolError(`cannot open ${args.path}`);
        }
        const editor = await vscode.window.showTextDocument(document, { preview: false });
        if (args.start_line !== undefined) {
          const last = Math.max(0, document.lineCount - 1);
          const start = Math.min(last, Math.max(0, args.start_line - 1));
          const end = Math.min(last, Math.max(start, (args.end_line ?? args.start_line) - 1));
          const range = new vscode.Range(start, 0, end, document.lineAt(end).text.length);
          editor.selection = new vscode.Selection(range.start, range.end);
          editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
        }
        return { content: `opened ${relative(uri)}${args.start_line !== undefined ? ` at line ${args.start_line}` : ''}` };
      },
    }),
    defineTool({
      name: 'get_selection',
      description: "The text the user has selected in the active editor, with the file and line range (or the cursor's position when nothing is selected).",
      params: {},
      async run() {
        const editor = vscode.window.activeTextEditor;
        if (!editor) return { content: 'no active editor' };
        const { selection, document } = editor;
        const where = `${relative(document.uri)}:${selection.start.line + 1}-${selection.end.line + 1}`;
        if (selection.isEmpty) return { content: `${where} (nothing selected; cursor at line ${selection.active.line + 1}, column ${selection.active.character + 1})` };
        return { content: `${where}\n${document.getText(selection)}` };
      },
    }),
  ];
  // Its list never changes (the roots are read when a tool runs): kept by the service's thread for good.
  return { name: 'editor', tools: async () => tools, watch: () => () => undefined };
}
