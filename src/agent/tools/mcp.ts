import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type * as z from 'zod';
import { version } from '../../../package.json';
import { nullLogger, type Logger } from '../../log/logger';
import { readline } from '../../platform/builtins';
import { wellFormed } from '../../protocol/code-points';
import type { McpServer } from '../../protocol/config';
import { createServerProcess, type ServerProcess } from './mcp-process';
import { mcpSdk } from './mcp-sdk';
import type { Tool, ToolContext, ToolOutput, ToolSource } from './types';

/** One entry of service.json `mcp_servers`. */
export type McpServerConfig = z.infer<typeof McpServer>;

export interface McpToolSourceOptions {
  logger?: Logger;
  /** Working directory of the server processes. Default: the service's. */
  cwd?: string;
  /** Limit of one `tools/call` (and `tools/list`). Default 60 s. */
  requestTimeoutMs?: number;
  /** Limit from spawning a server to its answer to `initialize`. Default 30 s. */
  startTimeoutMs?: number;
  /**
   * Wait before restarting a server that failed to start or died soon after starting; doubles with each
   * further such failure, up to 30 s. A server that ran for a while restarts at once. Default 2 s.
   */
  restartBackoffMs?: number;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
const DEFAULT_START_TIMEOUT_MS = 30_000;
const DEFAULT_RESTART_BACKOFF_MS = 2_000;
const MAX_RESTART_BACKOFF_MS = 30_000;
/** A server that dies sooner than this after starting counts as failing (the backoff grows). */
const STABLE_AFTER_MS = 30_000;
const MAX_STDERR_LINE = 2_000;
const CLIENT_INFO = { name: 'remote-assistant', version };

/**
 * The tools of the MCP servers of service.json, each as `<server>.<tool>`. One stdio client per
 * server (official SDK), started on first use, restarted when it dies (with a backoff), replaced when
 * its config entry changes, stopped with its children on `close()`.
 *
 * Tool names keep the spec's `<server>.<tool>` (what list_tools, permission rules and logs show); the
 * loop maps them to provider-safe names (`ModelToolNames` in src/agent/transcript.ts).
 */
export function createMcpToolSource(servers: () => Record<string, McpServerConfig>, options: McpToolSourceOptions = {}): ToolSource {
  return new McpToolSource(servers, options);
}

interface Settings {
  logger: Logger;
  cwd: string | undefined;
  requestTimeoutMs: number;
  startTimeoutMs: number;
  restartBackoffMs: number;
}

class McpToolSource implements ToolSource {
  readonly name = 'mcp';
  private readonly settings: Settings;
  private readonly slots = new Map<string, ServerSlot>();
  /** Slots of removed or changed entries whose process is being stopped. */
  private readonly retiring = new Map<ServerSlot, Promise<void>>();
  private closed = false;
  /** Should the service exit without close(), the servers (detached process groups) must not outlive it. */
  private readonly onExit = () => {
    for (const slot of [...this.slots.values(), ...this.retiring.keys()]) slot.killNow();
  };

  constructor(
    private readonly servers: () => Record<string, McpServerConfig>,
    options: McpToolSourceOptions,
  ) {
    this.settings = {
      logger: options.logger ?? nullLogger,
      cwd: options.cwd,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      startTimeoutMs: options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
      restartBackoffMs: options.restartBackoffMs ?? DEFAULT_RESTART_BACKOFF_MS,
    };
    process.on('exit', this.onExit);
  }

  async tools(): Promise<Tool[]> {
    if (this.closed) return [];
    this.sync();
    const lists = await Promise.all([...this.slots.values()].map((slot) => slot.tools((server, tool) => this.toolOf(server, tool))));
    const seen = new Set<string>();
    const tools: Tool[] = [];
    for (const tool of lists.flat()) {
      if (seen.has(tool.name)) {
        this.settings.logger.warn('mcp.duplicate_tool', { tool: tool.name });
        continue;
      }
      seen.add(tool.name);
      tools.push(tool);
    }
    return tools;
  }

  async close(): Promise<void> {
    this.closed = true;
    process.off('exit', this.onExit);
    const slots = [...this.slots.values()];
    this.slots.clear();
    await Promise.all([...slots.map((slot) => slot.stop('the service is stopping')), ...this.retiring.values()]);
  }

  private toolOf(server: string, tool: McpTool): Tool {
    return {
      // The service's name for it, well-formed (a lone surrogate as U+FFFD: the store could not keep it);
      // the server is called by its own name.
      name: wellFormed(`${server}.${tool.name}`),
      description: tool.description ?? tool.title ?? tool.annotations?.title ?? `Tool ${tool.name} of the MCP server ${server}.`,
      inputSchema: { ...tool.inputSchema, type: 'object' },
      parameters: parameterTypes(tool.inputSchema),
      // Another program's tool: what it does to files is not known here, so undo lists its calls.
      unrecordedEffects: true,
      run: (args, context) => this.call(server, tool.name, args, context),
    };
  }

  private async call(server: string, tool: string, args: Record<string, unknown>, context: ToolContext): Promise<ToolOutput> {
    if (this.closed) throw new Error(`MCP server "${server}" is stopped (the service is stopping)`);
    this.sync();
    const slot = this.slots.get(server);
    if (!slot) throw new Error(`MCP server "${server}" is no longer configured`);
    return slot.call(tool, args, context);
  }

  /** Brings the slots in line with the config: a removed or changed entry's process is stopped. */
  private sync(): void {
    let wanted: Record<string, McpServerConfig>;
    try {
      wanted = this.servers();
    } catch (error) {
      this.settings.logger.warn('mcp.config_unreadable', { error: messageOf(error) });
      return;
    }
    for (const [name, slot] of this.slots) {
      const config = Object.hasOwn(wanted, name) ? wanted[name] : undefined;
      if (config && keyOf(config) === slot.key) continue;
      this.slots.delete(name);
      this.settings.logger.info(config ? 'mcp.server_changed' : 'mcp.server_removed', { server: name });
      const stopped = slot.stop(config ? 'its configuration changed' : 'it was removed from the configuration');
      this.retiring.set(slot, stopped);
      void stopped.finally(() => this.retiring.delete(slot));
    }
    for (const [name, config] of Object.entries(wanted)) {
      if (!this.slots.has(name)) this.slots.set(name, new ServerSlot(name, config, this.settings));
    }
  }
}

/** One live server process and its client. */
interface Connection {
  readonly client: Client;
  readonly process: ServerProcess;
  alive: boolean;
  /** Why we are stopping it, when we are (its end is then no failure). */
  stopReason?: string;
  startedAt: number;
  /** tools/list, cached until the server says its list changed or the process is replaced. */
  tools?: Promise<McpTool[]>;
}

/** A configured server: at most one process at a time, started on demand. */
class ServerSlot {
  readonly key: string;
  private connection: Connection | undefined;
  private starting: Promise<Connection> | undefined;
  private stopReason: string | undefined;
  private failures = 0;
  private nextStartAt = 0;
  private lastFailure = '';
  /** Processes being killed, and the kills. */
  private readonly dying = new Set<ServerProcess>();
  private readonly disposing = new Set<Promise<void>>();
  /** The process of a start in progress. */
  private launching: ServerProcess | undefined;
  private readonly log: Logger;

  constructor(
    readonly name: string,
    private readonly config: McpServerConfig,
    private readonly settings: Settings,
  ) {
    this.key = keyOf(config);
    this.log = settings.logger;
  }

  async tools(toolOf: (server: string, tool: McpTool) => Tool): Promise<Tool[]> {
    let connection: Connection;
    try {
      connection = await this.connect();
    } catch (error) {
      // Already logged when the start failed; its tools are just missing meanwhile.
      this.log.debug('mcp.server_unavailable', { server: this.name, error: messageOf(error) });
      return [];
    }
    if (!connection.client.getServerCapabilities()?.tools) return [];
    const listing = (connection.tools ??= this.listTools(connection));
    try {
      return (await listing).map((tool) => toolOf(this.name, tool));
    } catch (error) {
      if (connection.tools === listing) connection.tools = undefined;
      this.log.warn('mcp.list_failed', { server: this.name, error: this.describe(error, connection, 'tools/list') });
      return [];
    }
  }

  async call(tool: string, args: Record<string, unknown>, context: ToolContext): Promise<ToolOutput> {
    const { signal } = context;
    if (signal.aborted) throw new Error(`the call to ${tool} on MCP server "${this.name}" was cancelled`);
    const connection = await this.connect();
    // A call-scoped signal: the SDK keeps its listener on the signal it is given after the call ends.
    const controller = new AbortController();
    const abort = () => controller.abort(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    try {
      const result = (await connection.client.callTool({ name: tool, arguments: args }, undefined, {
        signal: controller.signal,
        timeout: this.settings.requestTimeoutMs,
      })) as CallToolResult;
      return { content: contentOf(result), ...(result.isError ? { isError: true } : {}) };
    } catch (error) {
      if (signal.aborted) throw new Error(`the call to ${tool} on MCP server "${this.name}" was cancelled`);
      throw new Error(this.describe(error, connection, `the call to ${tool}`));
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }

  /** Stops the process (and waits for it, and for any failed one still being killed); the slot is not used again. */
  async stop(reason: string): Promise<void> {
    this.stopReason = reason;
    // A start in progress is cut short rather than waited for (it may take up to the start timeout).
    if (this.launching) this.dispose(this.launching);
    const starting = this.starting;
    if (starting) await starting.catch(() => undefined);
    const connection = this.connection;
    this.connection = undefined;
    if (connection) {
      connection.stopReason = reason;
      connection.alive = false;
      this.dispose(connection.process);
    }
    await Promise.all(this.disposing);
    if (connection) this.log.info('mcp.server_stopped', { server: this.name, reason });
  }

  killNow(): void {
    this.connection?.process.killNow();
    for (const server of this.dying) server.killNow();
  }

  private dispose(server: ServerProcess): void {
    this.dying.add(server);
    const killed = server.kill().finally(() => {
      this.dying.delete(server);
      this.disposing.delete(killed);
    });
    this.disposing.add(killed);
  }

  private connect(): Promise<Connection> {
    if (this.stopReason) return Promise.reject(new Error(`MCP server "${this.name}" is stopped (${this.stopReason})`));
    if (this.connection?.alive) return Promise.resolve(this.connection);
    if (this.starting) return this.starting;
    const wait = this.nextStartAt - Date.now();
    if (wait > 0) {
      return Promise.reject(new Error(`MCP server "${this.name}" is down (${this.lastFailure}); it will be restarted in ${Math.ceil(wait / 1000)} s`));
    }
    const starting = this.start();
    this.starting = starting;
    const clear = () => {
      if (this.starting === starting) this.starting = undefined;
    };
    starting.then(clear, clear);
    return starting;
  }

  private async start(): Promise<Connection> {
    const { command, args, env } = this.config;
    // The SDK's default environment (PATH, HOME...) plus the entry's own: the service's other
    // variables (its API keys) are not the server's business.
    const { Client, getDefaultEnvironment, ToolListChangedNotificationSchema } = mcpSdk();
    const server = createServerProcess({
      command,
      args,
      env: { ...getDefaultEnvironment(), ...env },
      cwd: this.settings.cwd,
    });
    this.captureStderr(server);
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const connection: Connection = { client, process: server, alive: false, startedAt: Date.now() };
    client.onclose = () => this.onClosed(connection);
    client.onerror = (error) => this.log.debug('mcp.transport_error', { server: this.name, error: error.message });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      connection.tools = undefined;
    });
    // Never the args or env: they may carry tokens.
    this.log.info('mcp.server_starting', { server: this.name, command });
    this.launching = server;
    try {
      await client.connect(server, { timeout: this.settings.startTimeoutMs });
    } catch (error) {
      if (this.stopReason) {
        this.dispose(server);
        throw new Error(`MCP server "${this.name}" is stopped (${this.stopReason})`);
      }
      const reason = this.startFailure(error, server);
      this.fail(reason);
      this.log.warn('mcp.server_failed', { server: this.name, command, error: reason });
      // Killing a server that ignores its stdin and SIGTERM takes a moment: nobody waits on it but stop().
      this.dispose(server);
      throw new Error(`MCP server "${this.name}" failed to start: ${reason}`);
    } finally {
      this.launching = undefined;
    }
    if (this.stopReason) {
      this.dispose(server);
      throw new Error(`MCP server "${this.name}" is stopped (${this.stopReason})`);
    }
    connection.alive = true;
    connection.startedAt = Date.now();
    this.connection = connection;
    const info = client.getServerVersion();
    this.log.info('mcp.server_started', { server: this.name, pid: server.pid, name: info?.name, version: info?.version });
    return connection;
  }

  private onClosed(connection: Connection): void {
    if (!connection.alive) return; // never started, or stopped by us
    connection.alive = false;
    connection.tools = undefined;
    if (this.connection === connection) this.connection = undefined;
    const reason = connection.process.exitReason ?? 'closed its connection';
    const upMs = Date.now() - connection.startedAt;
    this.log.warn('mcp.server_exited', { server: this.name, reason, up_ms: upMs });
    if (upMs < STABLE_AFTER_MS) this.fail(reason);
    else {
      this.failures = 0;
      this.nextStartAt = 0;
    }
  }

  private fail(reason: string): void {
    this.failures += 1;
    this.lastFailure = reason;
    const backoff = Math.min(this.settings.restartBackoffMs * 2 ** (this.failures - 1), MAX_RESTART_BACKOFF_MS);
    this.nextStartAt = Date.now() + backoff;
  }

  private startFailure(error: unknown, server: ServerProcess): string {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `command not found: ${this.config.command}`;
    if (code === 'EACCES') return `command not executable: ${this.config.command}`;
    const { McpError, ErrorCode } = mcpSdk();
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      return `no answer to initialize within ${seconds(this.settings.startTimeoutMs)}`;
    }
    if (server.exitReason && server.exitReason !== 'could not be started') return `it ${server.exitReason} before initializing`;
    return messageOf(error);
  }

  private describe(error: unknown, connection: Connection, what: string): string {
    if (connection.stopReason) return `MCP server "${this.name}" was stopped during ${what} (${connection.stopReason})`;
    const { McpError, ErrorCode } = mcpSdk();
    if (!connection.alive && error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
      return `MCP server "${this.name}" ${connection.process.exitReason ?? 'closed its connection'} during ${what}`;
    }
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      return `MCP server "${this.name}" did not answer ${what} within ${seconds(this.settings.requestTimeoutMs)}`;
    }
    return `MCP server "${this.name}": ${messageOf(error)}`;
  }

  private captureStderr(server: ServerProcess): void {
    const lines = readline().createInterface({ input: server.stderr, crlfDelay: Infinity });
    lines.on('line', (line) => {
      if (line.trim() === '') return;
      this.log.debug('mcp.stderr', { server: this.name, line: line.length > MAX_STDERR_LINE ? `${line.slice(0, MAX_STDERR_LINE)}…` : line });
    });
  }

  private async listTools(connection: Connection): Promise<McpTool[]> {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await connection.client.listTools(cursor ? { cursor } : undefined, { timeout: this.settings.requestTimeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }
}

/** What the model reads of a tools/call result: text as is, everything else summarized. */
export function contentOf(result: CallToolResult | Record<string, unknown>): string {
  const blocks = Array.isArray(result.content) ? (result.content as CallToolResult['content']) : [];
  const parts = blocks.map((block) => {
    switch (block.type) {
      case 'text':
        return block.text;
      case 'image':
      case 'audio':
        return `[${block.mimeType}, ${Buffer.byteLength(block.data, 'base64')} bytes]`;
      case 'resource': {
        const { resource } = block;
        if ('text' in resource && typeof resource.text === 'string') return `[resource ${resource.uri}]\n${resource.text}`;
        const size = 'blob' in resource && typeof resource.blob === 'string' ? Buffer.byteLength(resource.blob, 'base64') : 0;
        return `[resource ${resource.uri}, ${resource.mimeType ?? 'application/octet-stream'}, ${size} bytes]`;
      }
      case 'resource_link':
        return `[resource link ${block.uri}${block.name ? ` (${block.name})` : ''}]`;
      default:
        return `[${(block as { type?: unknown }).type ?? 'unknown'} content]`;
    }
  });
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  if (parts.length === 0 && 'toolResult' in result) return JSON.stringify(result.toolResult);
  return parts.join('\n');
}

/** Each property of a JSON Schema object mapped to its type name (`string`, `number|null`...). */
export function parameterTypes(schema: unknown): Record<string, string> {
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {};
  return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, typeNameOf(property)]));
}

function typeNameOf(schema: unknown): string {
  return typeNamesOf(schema).join('|') || 'any';
}

function typeNamesOf(schema: unknown): string[] {
  if (!isRecord(schema)) return [];
  const { type } = schema;
  if (typeof type === 'string') return [type];
  if (Array.isArray(type)) return unique(type.filter((t): t is string => typeof t === 'string'));
  const members = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(members)) {
    const names = members.map(typeNamesOf);
    // A member without a type accepts anything, and so does the union.
    return names.some((n) => n.length === 0) ? [] : unique(names.flat());
  }
  if (Array.isArray(schema.allOf)) return typeNamesOf(schema.allOf.find((member) => typeNamesOf(member).length > 0));
  if (Array.isArray(schema.enum)) return unique(schema.enum.map(jsonTypeOf));
  if ('const' in schema) return [jsonTypeOf(schema.const)];
  if (isRecord(schema.properties)) return ['object'];
  if (schema.items !== undefined) return ['array'];
  return [];
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'bigint' ? 'integer' : typeof value;
}

function keyOf(config: McpServerConfig): string {
  const env = Object.entries(config.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([config.command, config.args, env]);
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
