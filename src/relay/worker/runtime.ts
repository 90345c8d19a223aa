/**
 * The few Cloudflare Workers runtime APIs the relay uses, declared here rather than pulling in
 * @cloudflare/workers-types (whose globals clash with the DOM types the rest of the project uses).
 */

export interface WorkerSocket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  serializeAttachment(value: unknown): void;
  deserializeAttachment(): unknown;
}

export interface DurableObjectStorage {
  get<T>(key: string): Promise<T | undefined>;
  put(key: string, value: unknown): Promise<void>;
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number): Promise<void>;
}

export interface DurableObjectState {
  readonly storage: DurableObjectStorage;
  acceptWebSocket(socket: WorkerSocket, tags?: string[]): void;
  getWebSockets(tag?: string): WorkerSocket[];
  setWebSocketAutoResponse(pair?: unknown): void;
  getWebSocketAutoResponseTimestamp(socket: WorkerSocket): Date | null;
}

export interface DurableObjectStub {
  fetch(input: Request | string, init?: RequestInit): Promise<Response>;
}

export interface DurableObjectNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): DurableObjectStub;
}

export interface Fetcher {
  fetch(input: Request | string, init?: RequestInit): Promise<Response>;
}

export interface RelayEnv {
  RELAY: DurableObjectNamespace;
  AUTH_TOKEN?: string;
  /** Workers static assets (the phone page), when configured. */
  ASSETS?: Fetcher;
  /** Tests shorten the 90 s idle timeout with this variable. */
  IDLE_TIMEOUT_MS?: string;
  /** Tests lower the 1024 clients a machine may have. */
  MAX_CLIENTS_PER_MACHINE?: string;
  /** Tests shorten the 60 s window of the refused-connects log lines. */
  REFUSAL_LOG_WINDOW_MS?: string;
  /** `debug` for more log lines (each Durable Object start, e.g. after hibernation). */
  LOG_LEVEL?: string;
}

declare const WebSocketPair: new () => { 0: WorkerSocket; 1: WorkerSocket };
declare const WebSocketRequestResponsePair: new (request: string, response: string) => unknown;

export function newSocketPair(): [client: WorkerSocket, server: WorkerSocket] {
  const pair = new WebSocketPair();
  return [pair[0], pair[1]];
}

export function autoResponse(request: string, response: string): unknown {
  return new WebSocketRequestResponsePair(request, response);
}

/** The 101 answer handing `client` to the caller. */
export function upgradeResponse(client: WorkerSocket): Response {
  return new Response(null, { status: 101, webSocket: client } as ResponseInit);
}

export const WEBSOCKET_OPEN = 1;
