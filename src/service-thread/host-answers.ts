// The extension host's side of the service thread's host calls (host-calls.ts there): each is answered by
// the editor's own part (its language models, tool sources, terminal), its abort passed on.
import type { Host } from '../agent/host';
import type { Tool, ToolSource } from '../agent/tools/types';
import { toWire, type FromThread, type HostCall, type SourceRef, type ToThread, type WireTool } from './wire';

export class HostAnswers {
  private readonly running = new Map<number, AbortController>();
  /** Each source's tools as last listed, by name: a call runs the tool the service was offered. */
  private readonly listed = new Map<string, Map<string, Tool>>();

  constructor(
    private readonly host: Host,
    private readonly post: (message: ToThread) => void,
  ) {}

  received(message: Extract<FromThread, { t: 'call' | 'abort' }>): void {
    if (message.t === 'abort') return this.running.get(message.cid)?.abort(new Error('cancelled'));
    const { cid, call } = message;
    const controller = new AbortController();
    this.running.set(cid, controller);
    this.answer(cid, call, controller.signal).then(
      (value) => this.post({ t: 'answer', cid, value }),
      (error: unknown) => this.post({ t: 'answer', cid, error: toWire(error) }),
    );
  }

  /** Every call under way is aborted (the thread ended). */
  close(): void {
    for (const controller of this.running.values()) controller.abort(new Error('the service stopped'));
    this.running.clear();
  }

  private async answer(cid: number, call: HostCall, signal: AbortSignal): Promise<unknown> {
    try {
      switch (call.method) {
        case 'lm.complete': {
          const { streams, ...request } = call.request;
          const provider = this.host.languageModels?.();
          if (!provider) throw new Error('the editor offers no language models');
          return await provider.complete({
            ...request,
            signal,
            ...(streams ? { onDelta: (delta: string) => this.post({ t: 'piece', cid, delta }) } : {}),
            onRetry: (retry) => this.post({ t: 'piece', cid, retry }),
          });
        }
        case 'lm.listModels': {
          const provider = this.host.languageModels?.();
          return provider?.listModels ? await provider.listModels(signal) : [];
        }
        case 'tools.list': {
          const source = this.sourceOf(call.source);
          const tools = await source.tools(call.area);
          this.listed.set(key(call.source), new Map(tools.map((tool) => [tool.name, tool])));
          return tools.map(wireOf);
        }
        case 'tools.run': {
          const tool = this.listed.get(key(call.source))?.get(call.tool);
          if (!tool) throw new Error(`${call.tool}: no such tool in the editor`);
          return await tool.run(call.args, { conversationId: call.conversationId, signal });
        }
        case 'terminal.run': {
          if (!this.host.terminal) return undefined;
          return await this.host.terminal(call.cwd, call.commandLine, call.timeoutMs, signal);
        }
      }
    } finally {
      this.running.delete(cid);
    }
  }

  private sourceOf(ref: SourceRef): ToolSource {
    const source = (ref.later ? this.host.laterToolSources : this.host.toolSources)?.[ref.index];
    if (!source) throw new Error('no such tool source in the editor');
    return source;
  }
}

const key = (ref: SourceRef) => `${ref.later ? 'later' : 'first'}:${ref.index}`;

/** What crosses of a tool: its description for the model and list_tools (its run stays here). */
function wireOf(tool: Tool): WireTool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    parameters: tool.parameters,
    ...(tool.from ? { from: tool.from } : {}),
    ...(tool.unrecordedEffects ? { unrecordedEffects: true } : {}),
  };
}
