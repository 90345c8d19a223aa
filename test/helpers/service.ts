import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Service, type ServiceOptions } from '../../src/service';
import { hashPassword } from '../../src/transport/auth/passwords';
import { tempDir } from './temp';

export { cutPost } from './cut-post';
import { TestClient } from './ws-client';

export const TEST_TOKEN = 'test-access-token-0123456789abcdef-XYZ';
export const TEST_API_KEY = 'sk-test-secret-key-9f8e7d6c5b4a';

export interface RunningService {
  service: Service;
  dataDir: string;
  httpUrl: string;
  wsUrl: string;
  token: string;
  stop(): Promise<void>;
  /** Stops and cleans up the data directory. */
  dispose(): Promise<void>;
}

/** Writes service.json (test defaults + `config`) into a data dir. */
export async function writeConfig(dataDir: string, config: Record<string, unknown>): Promise<void> {
  await writeFile(join(dataDir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN, api_key: TEST_API_KEY, ...config }, null, 2));
}

/** Starts the real service on a free loopback port with a temp (or given) data dir. */
export async function startService(config: Record<string, unknown> = {}, options: Partial<ServiceOptions> & { dataDir?: string; keepConfig?: boolean } = {}): Promise<RunningService> {
  const temp = options.dataDir ? undefined : await tempDir('ra-service-');
  const dataDir = options.dataDir ?? temp!.dir;
  if (!options.keepConfig) await writeConfig(dataDir, config);
  const service = await Service.open({ host: '127.0.0.1', port: 0, ...options, dataDir });
  const { port } = await service.start();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await service.stop();
  };
  return {
    service,
    dataDir,
    httpUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    token: TEST_TOKEN,
    stop,
    dispose: async () => {
      await stop();
      await temp?.cleanup();
    },
  };
}

/** POSTs JSON (or a raw body) and returns status, headers and parsed body. */
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, body: json, text };
}

/** A session (password) user of `user add` logged in (POST /auth) and connected with its session token. */
export async function sessionClient(svc: RunningService, username: string, password: string): Promise<TestClient> {
  const login = await postJson(`${svc.httpUrl}/auth`, { username, password });
  return TestClient.authed(svc.wsUrl, (login.body!.data as { token: string }).token);
}

/** service.json `users`: password users of these names, all with `password`. */
export async function passwordUsers(password: string, ...usernames: string[]): Promise<{ username: string; password_hash: string }[]> {
  const password_hash = await hashPassword(password);
  return usernames.map((username) => ({ username, password_hash }));
}
