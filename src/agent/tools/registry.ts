import type { ToolInfo } from '../../protocol';
import type { Tool, ToolArea, ToolSource } from './types';

/** What `list_tools` shows of a tool. */
export function toolInfo(tool: Tool): ToolInfo {
  return { name: tool.name, description: tool.description, parameters: { ...tool.parameters }, ...(tool.from ? { from: tool.from } : {}) };
}

/**
 * The tools of every source. Each source is asked on every list, since custom tools follow service.json
 * edits and MCP servers come and go (a source that is slow to ask keeps its own cache). When two sources
 * offer the same name, the earlier source wins. The merged list is kept while every source gives the very
 * list it gave last time (or none, both times): the same array is then given back, and the agent's kept
 * specs and request views, which compare it by identity, stay (each turn of a 0-tool chat merged it anew).
 */
export class ToolRegistry {
  private readonly sources: ToolSource[];
  /** The last merge, by the sources asked (all, or those that follow an area): their lists and the result. */
  private readonly merged = new Map<boolean, { lists: Tool[][]; tools: Tool[] }>();

  constructor(sources: ToolSource[]) {
    this.sources = [...sources];
  }

  /** With `area` (a worktree's conversation): only the tools confined to it (ToolSource.followsArea). */
  async list(area?: ToolArea): Promise<Tool[]> {
    const sources = area ? this.sources.filter((source) => source.followsArea) : this.sources;
    // A source that fails (an MCP server that died) costs its own tools, not everyone's.
    const lists = await Promise.all(sources.map((source) => source.tools(area).catch((): Tool[] => [])));
    const kept = this.merged.get(area !== undefined);
    if (kept && sameLists(kept.lists, lists)) return kept.tools;
    const byName = new Map<string, Tool>();
    for (const tools of lists) {
      for (const tool of tools) if (!byName.has(tool.name)) byName.set(tool.name, tool);
    }
    const tools = [...byName.values()];
    this.merged.set(area !== undefined, { lists, tools });
    return tools;
  }

  async get(name: string): Promise<Tool | undefined> {
    return (await this.list()).find((tool) => tool.name === name);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.sources.map((source) => source.close?.()));
  }
}

/** Whether each source gave the very list it gave before (two empty lists count as the same). */
function sameLists(before: readonly Tool[][], now: readonly Tool[][]): boolean {
  for (let i = 0; i < now.length; i += 1) if (before[i] !== now[i] && (before[i].length > 0 || now[i].length > 0)) return false;
  return true;
}
