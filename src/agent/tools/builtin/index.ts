import type { Tool, ToolSource } from '../types';
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

/** The file and command tools, every path confined to the workspace roots (or to an area's: a worktree's folder). */
export function createBuiltinToolSource(options: BuiltinToolOptions): ToolSource {
  const tools = toolsIn(options.workspaceRoots);
  // One set per area, made once: a worktree's tools are as cheap to list as the workspace's.
  const inAreas = new Map<string, Tool[]>();
  return {
    name: 'builtin',
    followsArea: true,
    tools: async (area) => {
      if (!area) return tools;
      const key = area.roots.join('\0');
      let confined = inAreas.get(key);
      if (!confined) {
        const roots = [...area.roots];
        confined = toolsIn(() => roots);
        inAreas.set(key, confined);
      }
      return confined;
    },
  };
}

function toolsIn(roots: WorkspaceRoots): Tool[] {
  return [readFileTool(roots), writeFileTool(roots), editFileTool(roots), listDirectoryTool(roots), searchFilesTool(roots), runCommandTool(roots)];
}
