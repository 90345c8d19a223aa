// One secret list (the service's redactor: the config's secretValues and the live session tokens) and
// one redaction module (src/log/redact.ts): a secret of each kind never reaches the log, a provider's
// error as a client sees it, or a message to the editor's webview. The secrets are written without
// digits, so no key-shaped heuristic hides them: only the list does.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { WebviewBridge } from '../../src/extension/webview-bridge';
import { LOG_FILE_NAME } from '../../src/platform/paths';
import { hashPassword } from '../../src/transport/auth/passwords';
import type { HostToUi } from '../../src/protocol';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, startService, type RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

const PASSWORD = 'correct horse battery staple';
const secrets: Record<string, string> = {
  api_key: 'provider-api-key-alpha-bravo-charlie',
  auth_token: 'access-token-delta-echo-foxtrot-golf-hotel',
  relay_token: 'relay-channel-token-india-juliet-kilo-lima',
  webhook_secret: 'webhook-secret-mike-november-oscar',
  mcp_env: 'mcp-environment-papa-quebec-romeo',
};
let provider: FakeOpenAI;
let svc: RunningService;

before(async () => {
  provider = await startFakeOpenAI({ apiKey: secrets.api_key });
  const hash = await hashPassword(PASSWORD);
  secrets.password_hash = hash;
  svc = await startService({
    api_key: secrets.api_key,
    auth_token: secrets.auth_token,
    base_url: provider.url,
    model: 'fake-model',
    users: [{ username: 'ada', password_hash: hash }],
    channels: {
      phone: { type: 'websocket', url: 'ws://127.0.0.1:9/relay', auth_token: secrets.relay_token },
      webhook: { accounts: { shop: { incoming_path: '/hooks/shop', outgoing_url: 'http://127.0.0.1:9/in', secret: secrets.webhook_secret } } },
    },
    mcp_servers: { gh: { command: process.execPath, args: ['-e', ''], env: { GITHUB_TOKEN: secrets.mcp_env } } },
  });
  const login = await postJson(`${svc.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
  secrets.session_token = (login.body!.data as { token: string }).token;
});
after(async () => {
  await svc?.dispose();
  await provider?.close();
});

function assertNoSecret(text: string, where: string): void {
  for (const [kind, secret] of Object.entries(secrets)) assert.ok(!text.includes(secret), `the ${kind} reached ${where}: ${text}`);
}

test("the service's list holds a secret of each kind", () => {
  const held = svc.service.redactor.secrets();
  for (const [kind, secret] of Object.entries(secrets)) assert.ok(held.includes(secret), `${kind} missing`);
});

test("a provider's error quoting every secret reaches the client without them, and the log too", async () => {
  const quoted = Object.values(secrets).join(' and ');
  provider.script({ status: 400, body: { error: { message: `Rejected ${quoted} for this model. More: ${quoted}`, type: 'invalid_request_error' } } });
  const client = await TestClient.authed(svc.wsUrl, secrets.session_token);
  try {
    const response = await client.request({ type: 'chat', message: 'hello' });
    assert.equal(response.status, 'error');
    const text = JSON.stringify(response);
    assert.match(text, /Rejected \[redacted\]/, "the provider's explanation is kept, its secrets are not");
    assertNoSecret(text, 'the client');
  } finally {
    client.close();
  }
  svc.service.logger.info('test.every_secret', { note: quoted, nested: { list: Object.values(secrets) } });
  await svc.stop();
  const log = await readFile(join(svc.dataDir, LOG_FILE_NAME), 'utf8');
  assert.match(log, /test\.every_secret/);
  assertNoSecret(log, 'the log');
});

test('a message to the webview carries no secret of any kind, in text or in keys', () => {
  const posted: HostToUi[] = [];
  const bridge = new WebviewBridge(
    (message) => posted.push(message),
    () => undefined,
    () => svc.service.redactor.secrets(),
  );
  const quoted = Object.values(secrets).join(' ');
  // A tool call's arguments are free-form (a model's or a file's text): secrets in values, keys and escaped JSON.
  bridge.postEvent({
    event: 'tool.call',
    conversation_id: 'c1',
    tool: 'write_file',
    arguments: { output: `the file says ${quoted}`, escaped: JSON.stringify({ quoted }), [secrets.relay_token]: 'a key' },
  });
  bridge.dispose();
  assert.equal(posted.length, 1);
  const text = JSON.stringify(posted[0]);
  assert.match(text, /the file says \[redacted\]/);
  assertNoSecret(text, 'the webview');
  assert.ok(!JSON.parse(text).event.arguments.escaped.includes(JSON.stringify(secrets.password_hash).slice(1, -1)), 'nor in JSON text');
});
