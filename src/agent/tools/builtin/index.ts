import type { ToolSource } from '../types';
import type { WorkspaceRoots } from '../workspace';
import { editFileTool } from './edit-file';
import { listDirectoryTool } from './list-directory';
import { readFileTool } from './read-file';
import { runCommandTool } from './run-command';
import { searchFilesTool } from './search-files';
import { writeFileTool } from './write-file';

export interface BuiltinToolOptions {
  /** Read on every call: the workspace may change while the service runs. */
  workspaceRoots: WorkspaceRoots;
}

/** The file and command tools, every path confined to the workspace roots. */
export function createBuiltinToolSource(options: BuiltinToolOptions): ToolSource {
  const roots = options.workspaceRoots;
  const tools = [
    readFileTool(roots),
    writeFileTool(roots),
    editFileTool(roots),
    listDirectoryTool(roots),
    searchFilesTool(roots),
    runCommandTool(roots),
  ];
  return { name: 'builtin', tools: async () => tools };
}
