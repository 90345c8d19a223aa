import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { openForReading, pathOfOpen } from '../anchored-fs';
import { defineTool } from '../define-tool';
import { ToolError, type Tool } from '../types';
import { resolveWorkspacePath, workspaceSubject, type WorkspaceRoots } from '../workspace';

export const LIST_MAX_ENTRIES = 1000;

export function listDirectoryTool(roots: WorkspaceRoots): Tool {
  return defineTool({
    name: 'list_directory',
    description:
      'List the entries of a folder of the workspace (not recursive), sorted by name, one a line; folders end with /. ' +
      `path defaults to the workspace folder. At most ${LIST_MAX_ENTRIES} entries are shown. To find files by content use search_files.`,
    params: {
      path: { type: 'string', optional: true, description: 'Folder to list, relative to the workspace folder (default: the workspace folder).' },
    },
    subject: (args) => workspaceSubject(roots(), typeof args.path === 'string' ? args.path : undefined),
    async run(args) {
      const shown = args.path ?? '.';
      const target = await resolveWorkspacePath(roots(), shown);
      // Listed through the folder opened inside the workspace (see anchored-fs), not by its name again.
      const folder = await openForReading(target, shown);
      let entries: Dirent[];
      const folderPath = pathOfOpen(folder, target.path);
      try {
        if (!(await folder.stat()).isDirectory()) throw new ToolError(`${shown} is a file, not a folder; use read_file to read it`);
        entries = await readdir(folderPath, { withFileTypes: true });
      } finally {
        await folder.close();
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const lines: string[] = [];
      for (const entry of entries.slice(0, LIST_MAX_ENTRIES)) {
        let isDir = entry.isDirectory();
        if (entry.isSymbolicLink()) {
          isDir = await stat(path.join(target.path, entry.name)).then(
            (s) => s.isDirectory(),
            () => false,
          );
        }
        lines.push(isDir ? `${entry.name}/` : entry.name);
      }
      if (entries.length > LIST_MAX_ENTRIES) lines.push(`[... ${entries.length - LIST_MAX_ENTRIES} more entries not shown]`);
      const workspace = roots();
      if (args.path === undefined && workspace.length > 1) {
        lines.push(`[this is the first workspace folder; the others are ${workspace.slice(1).join(', ')}]`);
      }
      if (entries.length === 0 && lines.length === 0) return { content: `(${target.relative} is empty)` };
      return { content: lines.join('\n') };
    },
  });
}
