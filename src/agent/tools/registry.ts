import type { ToolInfo } from '../../protocol';
import type { Tool, ToolArea, ToolSource } from './types';

/** What `list_tools` shows of a tool. */
export function toolInfo(tool: Tool): ToolInfo {
  return { name: tool.name, description: tool.description, parameters: { ...tool.parameters }, ...(tool.from ? { from: tool.from } : {}) };
}

/**
 * The tools of every source. Nothing is cached here: each source is asked on every list, since custom
 * tools follow service.json edits and MCP servers come and go (a source that is slow to ask keeps its
 * own cache). When two sources offer the same name, the earlier source wins.
 */
export class ToolRegistry {
  private readonly sources: ToolSource[];

  constructor(sources: ToolSource[]) {
    this.sources = [...sources];
  }

  /** With `area` (a worktree's conversation): only the tools confined to it (ToolSource.followsArea). */
  async list(area?: ToolArea): Promise<Tool[]> {
    const sources = area ? this.sources.filter((source) => source.followsArea) : this.sources;
    // A source that fails (an MCP server that died) costs its own tools, not everyone's.
    const lists = await Promise.all(sources.map((source) => source.tools(area).catch((): Tool[] => [])));
    const byName = new Map<string, Tool>();
    for (const tools of lists) {
      for (const tool of tools) if (!byName.has(tool.name)) byName.set(tool.name, tool);
    }
    return [...byName.values()];
  }

  async get(name: string): Promise<Tool | undefined> {
    return (await this.list()).find((tool) => tool.name === name);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.sources.map((source) => source.close?.()));
  }
}
