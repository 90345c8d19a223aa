import * as vscode from 'vscode';
import { parameterTypes } from '../agent/tools/mcp';
import type { Tool, ToolContext, ToolOutput, ToolSource } from '../agent/tools/types';

/** The prefix of their names: rules (`vscode.*`), prompts and list_tools tell them from the agent's own. */
export const LM_TOOL_PREFIX = 'vscode.';

/** How often `vscode.lm.tools` is looked at for a change while the service keeps its list (watchTools). */
export const LM_TOOLS_LOOK_MS = 1_000;

/**
 * The tools other extensions contribute to VS Code (`vscode.lm.tools`, the MCP servers configured in
 * VS Code included), as the agent's tools named `vscode.<name>`. Listed afresh each time asked (extensions
 * come and go); `watch` tells when that list changed. They are called like any tool, so the agent's
 * permission gate (mode, rules, prompts, webhook opt-in) decides before `vscode.lm.invokeTool` ever runs.
 */
export function createLanguageModelToolSource(): ToolSource {
  return {
    name: 'vscode-lm',
    tools: async () => (vscode.lm.tools ?? []).filter((tool) => !isInternal(tool)).map(toolOf),
    watch: watchTools,
  };
}

/**
 * Calls `changed` when `vscode.lm.tools` lists other tools. VS Code has no event for it (`lm.onDidChangeTools`
 * was a proposal, never stable; 1.100's API has none), so it is looked at every LM_TOOLS_LOOK_MS, and at
 * once when an extension comes or goes. A look compares each tool's name, description and input schema
 * (the schema by identity: VS Code hands out the same object until the tool is registered again): ~10 µs
 * for a hundred tools on the extension host's thread, ~50 after a second idle (a probe of VS Code's getters).
 */
function watchTools(changed: () => void): () => void {
  const seen = (tools: readonly vscode.LanguageModelToolInformation[]) => tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
  let last = seen(vscode.lm.tools ?? []);
  const look = () => {
    const now = vscode.lm.tools ?? [];
    if (now.length === last.length && now.every((tool, i) => tool.name === last[i]!.name && tool.description === last[i]!.description && tool.inputSchema === last[i]!.inputSchema)) return;
    last = seen(now);
    changed();
  };
  const timer = setInterval(look, LM_TOOLS_LOOK_MS);
  timer.unref();
  const extensions = vscode.extensions.onDidChange(look);
  return () => {
    clearInterval(timer);
    extensions.dispose();
  };
}

/**
 * VS Code's own tools for its chat (`vscode_editFile_internal`, `vscode_searchExtensions_internal` in
 * 1.100) are listed too, but they belong to its chat session (one has no schema at all): not offered.
 */
function isInternal(tool: vscode.LanguageModelToolInformation): boolean {
  return tool.name.endsWith('_internal');
}

function toolOf(info: vscode.LanguageModelToolInformation): Tool {
  const schema = (info.inputSchema ?? {}) as Record<string, unknown>;
  return {
    name: `${LM_TOOL_PREFIX}${info.name}`,
    description: info.description || `The VS Code tool ${info.name}.`,
    inputSchema: { ...schema, type: 'object' },
    parameters: parameterTypes(schema),
    from: 'vscode',
    run: (args, context) => invoke(info.name, args, context),
  };
}

async function invoke(name: string, input: Record<string, unknown>, context: ToolContext): Promise<ToolOutput> {
  const cancel = new vscode.CancellationTokenSource();
  const onAbort = () => cancel.cancel();
  context.signal.addEventListener('abort', onAbort, { once: true });
  try {
    // No toolInvocationToken: the call comes from no chat request of VS Code's. Our gate has decided
    // already; a tool that asks for confirmation itself (prepareInvocation) still gets VS Code's dialog.
    const result = await vscode.lm.invokeTool(name, { input, toolInvocationToken: undefined }, cancel.token);
    return { content: textOf(result) };
  } finally {
    context.signal.removeEventListener('abort', onAbort);
    cancel.dispose();
  }
}

/** The result's text parts, joined; other parts (prompt-tsx, data) are named, not dropped silently. */
function textOf(result: vscode.LanguageModelToolResult): string {
  const parts = result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : `[a ${partKind(part)} part the assistant cannot read]`));
  return parts.join('') || '(the tool returned no text)';
}

function partKind(part: unknown): string {
  const name = (part as { constructor?: { name?: string } } | null)?.constructor?.name;
  return name && name !== 'Object' ? name : 'non-text';
}
