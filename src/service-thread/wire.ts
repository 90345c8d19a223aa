// Messages between the editor's extension host (hosted-service.ts) and the service's worker thread
// (service-thread.ts). The service runs on a thread of its own so that its work and its garbage collection
// never stop the extension host's loop, which every extension shares (docs/design.md, "The service on a
// thread of its own"). Everything here crosses by structured clone: plain data only.
import { ProviderError, type CompletionRequest, type ProviderErrorKind, type ProviderWait } from '../agent/providers/types';
import { DataDirInUseError } from '../platform/lock-file';
import { PortInUseError } from '../transport/port-in-use';
import type { Envelope, ServiceConfig, ServiceEvent } from '../protocol';
import type { ToolSource } from '../agent/tools/types';
import type { StartMarks } from './start-marks';
import type { LoopFigures } from '../extension/diagnostics';

/** What the thread serves (its first message, `boot`). */
export interface ThreadStart {
  dataDir: string;
  port?: number;
  host?: string;
  /** The editor's tool sources, in order: each one's name and whether its tools follow a worktree's area. */
  toolSources: SourceInfo[];
  laterToolSources: SourceInfo[];
  /** Whether the editor offers its language models (the `vscode` provider). */
  languageModels: boolean;
  /** Whether commands may run in the editor's terminal (run_command's visible runner). */
  terminal: boolean;
  /** The editor's values the service reads synchronously, as they are now (then pushed on every change). */
  mirrors: HostMirrors;
  /**
   * Listen as soon as the data directory's lock is held, without waiting for the editor's `start`: the
   * editor's loop, busy with every extension's activation at startup, is crossed once on the way from
   * activate() to listening rather than twice. The first `started` (or `start-failed`) answers it.
   */
  listen?: boolean;
}

export interface SourceInfo {
  name: string;
  followsArea?: boolean;
  /** The editor tells when its list may have changed (`tools-changed`, ToolSource.watch): listed once, kept until then. */
  kept?: boolean;
}

/** What the editor's side knows a tool source by (ToolSource.watch, the tools it last listed). */
export function describeSource(source: ToolSource): SourceInfo {
  return { name: source.name, ...(source.followsArea ? { followsArea: true } : {}), ...(source.watch ? { kept: true } : {}) };
}

/** What the service asks of the editor synchronously: kept on the thread, sent again whenever it changes. */
export interface HostMirrors {
  /** The editor's open folders on disk (none: the host has no folders to give, the current directory is used). */
  workspaceRoots?: string[];
  /** The API keys in the editor's SecretStorage, by provider. */
  apiKeys: [provider: string, key: string][];
}

/** An error as it crosses: its class's name (Hosting tells some apart), message, and the fields they carry. */
export interface WireError {
  name: string;
  message: string;
  /** PortInUseError's. */
  host?: string;
  port?: number;
  /** DataDirInUseError's. */
  pid?: number;
  /** ProviderError's. */
  provider?: string;
  kind?: string;
  status?: number;
  retryAfterMs?: number;
}

/** The editor's calls the service makes (the host's parts that live on the extension host's thread). */
export type HostCall =
  | { method: 'lm.complete'; request: WireCompletionRequest }
  | { method: 'lm.listModels' }
  | { method: 'tools.list'; source: SourceRef; area?: { roots: string[] } }
  | { method: 'tools.run'; source: SourceRef; tool: string; args: Record<string, unknown>; conversationId: string }
  | { method: 'terminal.run'; cwd: string; commandLine: string; timeoutMs: number };

/** A tool source by its place: the first list (toolSources) or the later one. */
export interface SourceRef {
  later: boolean;
  index: number;
}

export const sourceKey = (ref: SourceRef): string => `${ref.later ? 'later' : 'first'}:${ref.index}`;

/** A completion request without what cannot cross (its signal and callbacks: messages of their own). */
export type WireCompletionRequest = Omit<CompletionRequest, 'signal' | 'onDelta' | 'onRetry'> & {
  streams: boolean;
};

/** A tool as listed across: what the model and list_tools see (its run is a call back). */
export interface WireTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  parameters: Record<string, string>;
  from?: 'vscode';
  unrecordedEffects?: boolean;
}

/** Main thread -> service thread. */
export type ToThread =
  /** The first: what to serve. */
  | { t: 'boot'; start: ThreadStart }
  | { t: 'start' }
  | { t: 'stop' }
  | { t: 'host-ready' }
  | { t: 'mirrors'; mirrors: HostMirrors }
  /** What one of the editor's kept sources lists may have changed: the thread lists it again when next asked. */
  | { t: 'tools-changed'; source: SourceRef }
  | { t: 'lan'; rid: number; enabled: boolean }
  /** Measure Responsiveness on the thread's own loop: `on` starts its monitor, off stops it (`loop-figures` answers). */
  | { t: 'monitor'; on: boolean }
  /** `events`: the only kinds this session hears (none given: every one). */
  | { t: 'session-open'; sid: number; events?: readonly ServiceEvent['event'][] }
  | { t: 'session-request'; sid: number; rid: number; frame: unknown }
  | { t: 'session-close'; sid: number }
  /** A host call's answer. */
  | { t: 'answer'; cid: number; value?: unknown; error?: WireError }
  /** A streamed piece of a host call (a model's delta, a retry's wait). */
  | { t: 'piece'; cid: number; delta?: string; retry?: ProviderWait };

/**
 * What the thread sends in batches (TickBatch: those of one turn of its loop cross as one message, in order):
 * a session's events and answers, most of the port's traffic while a chat streams.
 */
export type Batched = { t: 'event'; sid: number; event: ServiceEvent } | { t: 'response'; rid: number; envelope: Envelope };

/** Service thread -> main thread. */
export type FromThread =
  | { t: 'begun' }
  | { t: 'begin-failed'; error: WireError }
  | { t: 'ready' }
  | { t: 'ready-failed'; error: WireError }
  | { t: 'started'; address: { host: string; port: number; url: string }; marks?: StartMarks }
  | { t: 'start-failed'; error: WireError }
  | { t: 'stopped'; error?: WireError }
  | { t: 'config'; config: ServiceConfig; fields: string[] }
  | { t: 'secrets'; secrets: string[] }
  | { t: 'lan-done'; rid: number; changed?: boolean; error?: WireError }
  /** The thread's own loop over the measurement (none: it was not measuring). */
  | { t: 'loop-figures'; figures?: LoopFigures }
  | Batched
  /** Two or more of them, in the order they were sent (one alone crosses as itself). */
  | { t: 'batch'; messages: Batched[] }
  | { t: 'session-closed'; sid: number }
  | { t: 'call'; cid: number; call: HostCall }
  | { t: 'abort'; cid: number };

export function toWire(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const wire: WireError = { name: error.name, message: error.message };
  for (const field of ['host', 'port', 'pid', 'provider', 'kind', 'status', 'retryAfterMs'] as const) {
    const value = (error as unknown as Record<string, unknown>)[field];
    if (typeof value === 'string' || typeof value === 'number') (wire as unknown as Record<string, unknown>)[field] = value;
  }
  return wire;
}

/**
 * An error as it crossed, made again as the other side would have met it in process: the classes the
 * extension (Hosting: PortInUseError, DataDirInUseError) and the agent (ProviderError's kind) tell apart;
 * any other as an Error of its name and message.
 */
export function fromWire(error: WireError): Error {
  if (error.name === 'PortInUseError' && error.port !== undefined) return new PortInUseError(error.host ?? '', error.port);
  if (error.name === 'DataDirInUseError' && error.pid !== undefined) {
    const inUse = new DataDirInUseError('', error.pid);
    inUse.message = error.message;
    return inUse;
  }
  if (error.name === 'ProviderError' && error.provider !== undefined && error.kind !== undefined) {
    return new ProviderError(error.provider, error.kind as ProviderErrorKind, error.message, error.status, error.retryAfterMs);
  }
  const made = new Error(error.message);
  made.name = error.name;
  return made;
}
