import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Miniflare } from 'miniflare';
import { spawnListening } from '../../bench/util';

const ROOT = join(__dirname, '..', '..');
/** The built relays (`node esbuild.mjs`): the tests run what is deployed. */
export const NODE_RELAY = join(ROOT, 'dist', 'relay.js');
export const WORKER_BUNDLE = join(ROOT, 'dist', 'worker', 'relay.js');
/** As in wrangler.toml. */
export const COMPATIBILITY_DATE = '2026-04-26';

export const TEST_AUTH_TOKEN = 'relay-test-auth-token-0123456789abcdef';

export interface TargetOptions {
  authToken?: string;
  /** Shortens the 90 s idle timeout. */
  idleTimeoutMs?: number;
  /** Lowers the 1024 clients a machine may have. */
  maxClientsPerMachine?: number;
  /** Folder served as the phone page. */
  staticDir?: string;
  /** Shortens the 60 s window of the refused-connects log lines. */
  refusalLogWindowMs?: number;
  /** Node relay only: --trust-proxy. */
  trustProxy?: boolean;
}

/** A running relay, either deployment, on 127.0.0.1. */
export interface RelayTarget {
  readonly name: string;
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  /** ws://127.0.0.1:PORT */
  readonly wsOrigin: string;
  /** Whether registrations outlive a restart (Durable Object storage) or not (Node memory). */
  readonly keepsRegistrations: boolean;
  /** Stops the relay and starts it again on the same port. */
  restart(): Promise<void>;
  /** What the relay logged so far (since its last start). */
  output(): string;
  close(): Promise<void>;
}

export type StartRelay = (options?: TargetOptions) => Promise<RelayTarget>;

const loopback = (port: number) => ({ origin: `http://127.0.0.1:${port}`, wsOrigin: `ws://127.0.0.1:${port}` });

/** `node dist/relay.js --port N` as a child process. */
export const startNodeRelay: StartRelay = async (options = {}) => {
  const env: NodeJS.ProcessEnv = { AUTH_TOKEN: options.authToken ?? TEST_AUTH_TOKEN };
  if (options.idleTimeoutMs) env.IDLE_TIMEOUT_MS = String(options.idleTimeoutMs);
  if (options.maxClientsPerMachine) env.MAX_CLIENTS_PER_MACHINE = String(options.maxClientsPerMachine);
  if (options.refusalLogWindowMs) env.REFUSAL_LOG_WINDOW_MS = String(options.refusalLogWindowMs);
  const args = (port: number) => [
    NODE_RELAY,
    '--port',
    String(port),
    '--host',
    '127.0.0.1',
    ...(options.staticDir ? ['--static', options.staticDir] : []),
    ...(options.trustProxy ? ['--trust-proxy'] : []),
  ];
  let running = await spawnListening(args(0), env);
  const port = running.port;
  return {
    name: 'node',
    ...loopback(port),
    keepsRegistrations: false,
    async restart() {
      await running.stop();
      running = await spawnListening(args(port), env);
    },
    output: () => running.output(),
    async close() {
      await running.stop();
      if (running.child.exitCode !== 0) throw new Error(`the relay exited ${running.child.exitCode}:\n${running.output()}`);
    },
  };
};

/** The Worker bundle in Miniflare (workerd), Durable Objects persisted in a temp folder. */
export const startWorkerRelay: StartRelay = async (options = {}) => {
  const persist = await mkdtemp(join(tmpdir(), 'ra-relay-do-'));
  const bindings: Record<string, string> = { AUTH_TOKEN: options.authToken ?? TEST_AUTH_TOKEN, LOG_LEVEL: 'debug' };
  if (options.idleTimeoutMs) bindings.IDLE_TIMEOUT_MS = String(options.idleTimeoutMs);
  if (options.maxClientsPerMachine) bindings.MAX_CLIENTS_PER_MACHINE = String(options.maxClientsPerMachine);
  if (options.refusalLogWindowMs) bindings.REFUSAL_LOG_WINDOW_MS = String(options.refusalLogWindowMs);
  let output = '';
  const create = async (port: number) => {
    output = '';
    const mf = new Miniflare({
      modules: true,
      scriptPath: WORKER_BUNDLE,
      compatibilityDate: COMPATIBILITY_DATE,
      durableObjects: { RELAY: { className: 'Relay', useSQLite: true } },
      durableObjectsPersist: persist,
      bindings,
      ...(options.staticDir
        ? {
            assets: {
              directory: options.staticDir,
              binding: 'ASSETS',
              // As wrangler.toml's run_worker_first: the Worker answers every request, assets included.
              routerConfig: { has_user_worker: true, invoke_user_worker_ahead_of_assets: true },
              assetConfig: { html_handling: 'none', not_found_handling: 'none' },
            },
          }
        : {}),
      host: '127.0.0.1',
      port,
      cf: false,
      handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
        for (const stream of [stdout, stderr]) stream.on('data', (chunk: Buffer) => (output += chunk));
      },
    });
    return { mf, url: await mf.ready };
  };
  let running = await create(0);
  const port = Number(running.url.port);
  return {
    name: 'worker',
    ...loopback(port),
    keepsRegistrations: true,
    async restart() {
      await running.mf.dispose();
      running = await create(port);
    },
    output: () => output,
    async close() {
      await running.mf.dispose();
      await rm(persist, { recursive: true, force: true });
    },
  };
};

/** POST /register (with no Authorization header when authToken is null); the answer's status and body. */
export async function register(target: RelayTarget, machineId: string, authToken: string | null = TEST_AUTH_TOKEN) {
  const response = await fetch(`${target.origin}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authToken === null ? {} : { authorization: `Bearer ${authToken}` }) },
    body: JSON.stringify({ machine_id: machineId }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}
