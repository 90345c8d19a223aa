import type { ServiceConfig } from '../protocol';
import type { Logger } from '../log/logger';
import type { Store } from '../store';
import type { Host } from './host';
import { workspaceRootsOf } from './workspace-roots';
import { createBuiltinToolSource } from './tools/builtin';
import { createCustomToolSource } from './tools/custom';
import { createMcpToolSource } from './tools/mcp';
import { createMemoryToolSource } from './tools/memory';
import { ToolRegistry } from './tools/registry';
import { ToolError, type Tool } from './tools/types';
import { createTodoToolSource } from './tools/todo';
import { runCommandTool } from './tools/builtin/run-command';
import { terminalRunCommand } from './tools/terminal-run-command';

/**
 * Every tool the agent may call, in precedence order: the host's own (the editor's), built-in,
 * memory, todo, custom tools of service.json, MCP servers', then the host's others (VS Code's lm tools). Sources read the config live.
 */
export function createToolRegistry(config: () => ServiceConfig, store: Store, logger: Logger, host: Host = {}): ToolRegistry {
  const workspaceRoots = () => workspaceRootsOf(config(), host);
  // The host's terminal runs run_command where the person sees it (its name shadows the built-in's). Like
  // the host's other tools it is not offered to a worktree's conversation (no followsArea).
  const inTerminal = host.terminal ? [terminalRunCommand(runCommandTool(workspaceRoots), workspaceRoots, host.terminal)] : [];
  return new ToolRegistry([
    ...(inTerminal.length > 0 ? [{ name: 'terminal', tools: async () => inTerminal }] : []),
    ...(host.toolSources ?? []),
    ...ownToolSources(config, store, workspaceRoots),
    createMcpToolSource(() => config().mcp_servers, { logger: logger.child({ component: 'mcp' }), cwd: workspaceRoots()[0] }),
    ...(host.laterToolSources ?? []),
  ]);
}

/**
 * The tools of the warm-up's practice turn (Agent.practiceTwin), over its scratch store: the service's own
 * sources, not an MCP server's (listing them starts the server's process) nor the host's, offered as
 * the real ones are (their list and specs are what a first request builds), and none of which runs:
 * the practice's canned answer asks none today, and were it to, nothing may be written, run or asked.
 */
export function createPracticeToolRegistry(config: () => ServiceConfig, store: Store, workspaceRoots: () => string[]): ToolRegistry {
  return new ToolRegistry(
    ownToolSources(config, store, workspaceRoots).map((source) => ({
      name: source.name,
      followsArea: source.followsArea,
      tools: async (area) => (await source.tools(area)).map(refusingEveryCall),
    })),
  );
}

/**
 * `tool`'s name, description and arguments, refusing every call: no preview or subject is worked out
 * (they read files), and it changes nothing outside its conversation (`conversationOnly`), so the
 * permission gate, which would ask a person, is never reached either.
 */
function refusingEveryCall(tool: Tool): Tool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    parameters: tool.parameters,
    conversationOnly: true,
    run: () => Promise.reject(new ToolError(`${tool.name}: the warm-up's practice runs no tool`)),
  };
}

/** The sources of the service's own tools: built-in, memory, todo, custom tools of service.json. */
function ownToolSources(config: () => ServiceConfig, store: Store, workspaceRoots: () => string[]) {
  return [
    createBuiltinToolSource({ workspaceRoots }),
    createMemoryToolSource(store.memory),
    createTodoToolSource(store.conversations),
    createCustomToolSource(() => config().tools, { workspaceRoots }),
  ];
}

export { workspaceRootsOf };
