// The extension host's side of the service thread's host calls (host-calls.ts there): each is answered by
// the editor's own part (its language models, tool sources, terminal), its abort passed on.
import type { Host } from '../agent/host';
import type { Tool, ToolArea, ToolSource } from '../agent/tools/types';
import { sourceKey, toWire, type FromThread, type HostCall, type SourceRef, type ToThread, type WireTool } from './wire';

/** A source's tools as last listed here, by name; `at`: its changes counted when that listing began. */
interface Listed {
  tools: Map<string, Tool>;
  area?: ToolArea;
  at: number;
}

export class HostAnswers {
  private readonly running = new Map<number, AbortController>();
  /** Each source's tools as last listed: a call runs only a tool listed under that name. */
  private readonly listed = new Map<string, Listed>();
  /** Each watched source's changes, counted: a listing begun before the last one is not what it lists now. */
  private readonly changes = new Map<string, number>();
  private readonly unwatch: (() => void)[] = [];

  constructor(
    private readonly host: Host,
    private readonly post: (message: ToThread) => void,
  ) {
    // The thread keeps these sources' lists (ThreadStart's `kept`) until it is told they changed.
    for (const later of [false, true]) {
      (later ? host.laterToolSources : host.toolSources)?.forEach((source, index) => {
        if (source.watch) this.unwatch.push(source.watch(() => this.changed({ later, index })));
      });
    }
  }

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
    for (const stop of this.unwatch.splice(0)) stop();
    for (const controller of this.running.values()) controller.abort(new Error('the service stopped'));
    this.running.clear();
  }

  private changed(ref: SourceRef): void {
    const key = sourceKey(ref);
    this.changes.set(key, (this.changes.get(key) ?? 0) + 1);
    this.post({ t: 'tools-changed', source: ref });
  }

  private async list(ref: SourceRef, area: ToolArea | undefined): Promise<Tool[]> {
    const key = sourceKey(ref);
    const at = this.changes.get(key) ?? 0;
    const tools = await this.sourceOf(ref).tools(area);
    this.listed.set(key, { tools: new Map(tools.map((tool) => [tool.name, tool])), ...(area ? { area } : {}), at });
    return tools;
  }

  /**
   * The tool `ref` lists under `name`: as last listed, or listed again here (no crossing) when the source
   * changed since, so that a step listed before the change runs nothing the editor no longer offers.
   */
  private async listedTool(ref: SourceRef, name: string): Promise<Tool | undefined> {
    const key = sourceKey(ref);
    const last = this.listed.get(key);
    if (last && last.at !== (this.changes.get(key) ?? 0)) await this.list(ref, last.area);
    return this.listed.get(key)?.tools.get(name);
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
        case 'tools.list':
          return (await this.list(call.source, call.area)).map(wireOf);
        case 'tools.run': {
          const tool = await this.listedTool(call.source, call.tool);
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
