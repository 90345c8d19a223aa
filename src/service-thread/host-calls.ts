// The service thread's side of its host: a `Host` (agent/host.ts) whose parts call the extension host's
// thread (host-answers.ts there) and wait for the answer. What the service reads synchronously (the
// editor's folders, its API keys) is kept here, sent again by the editor at every change.
import { ProviderError, type CompletionRequest, type CompletionResult, type Provider } from '../agent/providers/types';
import type { Host } from '../agent/host';
import type { ProcessResult } from '../agent/tools/process-runner';
import type { Tool, ToolArea, ToolOutput, ToolSource } from '../agent/tools/types';
import { fromWire, sourceKey, type FromThread, type HostCall, type HostMirrors, type SourceInfo, type SourceRef, type ThreadStart, type ToThread, type WireTool } from './wire';

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  onPiece?(piece: Extract<ToThread, { t: 'piece' }>): void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export class HostCalls {
  mirrors: HostMirrors;
  readonly host: Host;
  private next = 0;
  private readonly pending = new Map<number, Pending>();
  private closed = false;
  /** Per kept source (SourceInfo's `kept`): drops its kept list. */
  private readonly forget = new Map<string, () => void>();

  constructor(
    start: ThreadStart,
    private readonly post: (message: FromThread) => void,
  ) {
    this.mirrors = start.mirrors;
    const models = start.languageModels ? this.languageModels() : undefined;
    this.host = {
      ...(start.mirrors.workspaceRoots ? { workspaceRoots: () => this.mirrors.workspaceRoots ?? [] } : {}),
      apiKey: (provider) => this.mirrors.apiKeys.find(([name]) => name === provider)?.[1],
      ...(models ? { languageModels: () => models } : {}),
      ...(start.terminal
        ? { terminal: (cwd, commandLine, timeoutMs, signal) => this.call({ method: 'terminal.run', cwd, commandLine, timeoutMs }, { signal }) as Promise<ProcessResult | undefined> }
        : {}),
      toolSources: start.toolSources.map((info, index) => this.toolSource(info, { later: false, index })),
      laterToolSources: start.laterToolSources.map((info, index) => this.toolSource(info, { later: true, index })),
    };
  }

  /** One call to the editor's thread; its pieces (a model's deltas) as they come; the signal's abort is sent on. */
  call(call: HostCall, options: { signal?: AbortSignal; onPiece?: Pending['onPiece'] } = {}): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error('the service is stopping'));
    const cid = (this.next += 1);
    return new Promise((resolve, reject) => {
      const pending: Pending = { resolve, reject, onPiece: options.onPiece, signal: options.signal };
      if (options.signal) {
        if (options.signal.aborted) return reject(options.signal.reason as Error);
        pending.onAbort = () => this.post({ t: 'abort', cid });
        options.signal.addEventListener('abort', pending.onAbort, { once: true });
      }
      this.pending.set(cid, pending);
      this.post({ t: 'call', cid, call });
    });
  }

  received(message: Extract<ToThread, { t: 'answer' | 'piece' }>): void {
    const pending = this.pending.get(message.cid);
    if (!pending) return;
    if (message.t === 'piece') return pending.onPiece?.(message);
    this.pending.delete(message.cid);
    if (pending.onAbort) pending.signal?.removeEventListener('abort', pending.onAbort);
    if (message.error) pending.reject(fromWire(message.error));
    else pending.resolve(message.value);
  }

  /** The editor's source `ref` may list other tools now: asked again at its next listing. */
  toolsChanged(ref: SourceRef): void {
    this.forget.get(sourceKey(ref))?.();
  }

  /** Every call still waiting fails (the thread is ending). */
  close(): void {
    this.closed = true;
    for (const [cid, pending] of this.pending) {
      this.pending.delete(cid);
      pending.reject(new Error('the service is stopping'));
    }
  }

  /** The `vscode` provider: the editor's language models, asked on the editor's thread. */
  private languageModels(): Provider {
    return {
      name: 'vscode',
      complete: async (request: CompletionRequest) => {
        const { signal, onDelta, onRetry, ...rest } = request;
        // As the editor's provider fails in process (lm-provider.ts): the agent tells a cancelled turn by it.
        if (signal?.aborted) throw new ProviderError('vscode', 'cancelled', 'vscode: cancelled');
        return (await this.call(
          { method: 'lm.complete', request: { ...rest, streams: onDelta !== undefined } },
          {
            signal,
            onPiece: (piece) => {
              if (piece.delta !== undefined) onDelta?.(piece.delta);
              else if (piece.retry) onRetry?.(piece.retry);
            },
          },
        )) as CompletionResult;
      },
      listModels: async () => (await this.call({ method: 'lm.listModels' })) as string[],
    };
  }

  /** One of the editor's tool sources; its tools kept while the editor lists the same (the agent compares them by identity). */
  private toolSource(info: SourceInfo, source: SourceRef): ToolSource {
    let kept = new Map<string, { wire: string; tool: Tool }>();
    const list = async (area?: ToolArea) => {
      const listed = (await this.call({ method: 'tools.list', source, ...(area ? { area: { roots: area.roots } } : {}) })) as WireTool[];
      const next = new Map<string, { wire: string; tool: Tool }>();
      const tools = listed.map((wire) => {
        const text = JSON.stringify(wire);
        const same = kept.get(wire.name);
        const tool = same && same.wire === text ? same.tool : this.proxyTool(source, wire);
        next.set(wire.name, { wire: text, tool });
        return tool;
      });
      kept = next;
      return tools;
    };
    // A kept source's listing, from the moment it is asked: a change told meanwhile drops it, so a listing
    // in flight then answers its own callers and is never kept.
    let listing: { area: string; tools: Promise<Tool[]> } | undefined;
    if (info.kept) this.forget.set(sourceKey(source), () => (listing = undefined));
    return {
      name: info.name,
      ...(info.followsArea ? { followsArea: true } : {}),
      tools: (area?: ToolArea) => {
        if (!info.kept) return list(area);
        const where = JSON.stringify(area?.roots ?? null);
        if (listing?.area === where) return listing.tools;
        const asked = { area: where, tools: list(area) };
        listing = asked;
        // One that failed (the thread stopping) is not kept either.
        asked.tools.catch(() => listing === asked && (listing = undefined));
        return asked.tools;
      },
    };
  }

  private proxyTool(source: SourceRef, wire: WireTool): Tool {
    return {
      ...wire,
      run: async (args, context) => {
        const output = (await this.call({ method: 'tools.run', source, tool: wire.name, args, conversationId: context.conversationId }, { signal: context.signal })) as ToolOutput;
        // A Buffer crosses as a Uint8Array.
        return output.image ? { ...output, image: { ...output.image, bytes: Buffer.from(output.image.bytes) } } : output;
      },
    };
  }
}
