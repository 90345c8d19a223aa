import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseConfigText } from '../../src/config/config-file';
import { nullLogger } from '../../src/log/logger';
import { Authenticator } from '../../src/transport/auth/auth';
import { hashPassword } from '../../src/transport/auth/passwords';
import { postJson, startService, type RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

// A socket keeps the rights it authenticated with only while that credential (and its address) is
// still good: rotating auth_token, narrowing allow_from, removing a user or a session's expiry close it
// at once, not at its next command.
const PASSWORD = 'correct horse battery staple';
const NEW_TOKEN = 'rotated-access-token-0123456789abcdef-XYZ';
const TOKEN_A = 'first-access-token-0123456789abcdef-ABCDEF';

/** Edits service.json by hand, as a user would; the service's watcher picks it up. */
async function editConfigFile(svc: RunningService, change: (raw: Record<string, unknown>) => void): Promise<void> {
  const file = join(svc.dataDir, 'service.json');
  const raw = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  change(raw);
  await writeFile(file, JSON.stringify(raw, null, 2));
}

async function withService(config: Record<string, unknown>, run: (svc: RunningService) => Promise<void>): Promise<void> {
  const svc = await startService(config);
  try {
    await run(svc);
  } finally {
    await svc.dispose();
  }
}

async function sessionToken(svc: RunningService, username = 'ada'): Promise<string> {
  const reply = await postJson(`${svc.httpUrl}/auth`, { username, password: PASSWORD });
  assert.equal(reply.status, 200, reply.text);
  return (reply.body!.data as { token: string }).token;
}

test('rotating auth_token closes sockets opened with the old token (4401); the new token works', async () => {
  await withService({}, async (svc) => {
    const old = await TestClient.authed(svc.wsUrl, svc.token);
    await editConfigFile(svc, (raw) => (raw.auth_token = NEW_TOKEN));
    const closed = await old.waitClose(5_000);
    assert.equal(closed.code, 4401);
    assert.ok(!old.frames.some((f) => f.event === 'config.changed'), 'the revoked socket hears nothing of the change');
    const fresh = await TestClient.authed(svc.wsUrl, NEW_TOKEN);
    assert.equal((await fresh.request({ type: 'get_config' })).status, 'ok');
    fresh.close();
  });
});

test('a principal of the access token is checked against the token in force, whichever digest object holds it', () => {
  const configWith = (auth_token: string) => parseConfigText('service.json', JSON.stringify({ auth_token })).config;
  let config = configWith(TOKEN_A);
  const auth = new Authenticator(() => config, nullLogger);
  const principal = auth.verify(TOKEN_A)!;
  assert.equal(principal.kind, 'access');
  assert.equal(auth.isValid(principal), true);
  config = configWith(TOKEN_A); // Another change (a new configuration object), the same token.
  assert.equal(auth.isValid(principal), true);
  config = configWith(NEW_TOKEN);
  assert.equal(auth.isValid(principal), false);
  assert.equal(auth.verify(TOKEN_A), null);
  // Back to the first token: its digest is made anew, and the principal's is compared by its bytes.
  config = configWith(TOKEN_A);
  assert.equal(auth.isValid(principal), true);
  assert.equal(auth.isValid(auth.verify(TOKEN_A)!), true);
});

test('narrowing allow_from closes sockets from addresses no longer allowed (4403)', async () => {
  const lan = (allow_from: string[]) => [{ name: 'lan', type: 'tcp', port: 5000, allow_from }];
  await withService({ channels: lan(['127.0.0.1', '::1']) }, async (svc) => {
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    await editConfigFile(svc, (raw) => (raw.channels = lan(['10.9.8.*'])));
    assert.equal((await client.waitClose(5_000)).code, 4403);
  });
});

test('an unrelated config change leaves sockets open', async () => {
  await withService({}, async (svc) => {
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    await editConfigFile(svc, (raw) => (raw.temperature = 0.3));
    await client.next((f) => f.event === 'config.changed');
    assert.equal((await client.request({ type: 'get_config' })).status, 'ok');
    client.close();
  });
});

test('removing a user closes their session sockets (4401)', async () => {
  const users = [
    { username: 'ada', password_hash: await hashPassword(PASSWORD) },
    { username: 'bob', password_hash: await hashPassword(PASSWORD) },
  ];
  await withService({ users }, async (svc) => {
    const ada = await TestClient.authed(svc.wsUrl, await sessionToken(svc, 'ada'));
    const bob = await TestClient.authed(svc.wsUrl, await sessionToken(svc, 'bob'));
    await editConfigFile(svc, (raw) => (raw.users = users.filter((u) => u.username === 'bob')));
    assert.equal((await ada.waitClose(5_000)).code, 4401);
    await bob.next((f) => f.event === 'config.changed');
    assert.equal((await bob.request({ type: 'get_config' })).status, 'ok');
    bob.close();
  });
});

test('an expiring session token closes its idle socket at expiry (4401): no more events, no longer a prompt answerer', async () => {
  const users = [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }];
  await withService({ users, session_ttl_seconds: 1 }, async (svc) => {
    const session = await TestClient.authed(svc.wsUrl, await sessionToken(svc));
    const owner = await TestClient.authed(svc.wsUrl, svc.token);
    assert.equal(svc.service.events.size, 2);
    const closed = await session.waitClose(5_000);
    assert.equal(closed.code, 4401);
    assert.equal(svc.service.events.size, 1, 'only the owner is left to hear events and answer prompts');
    assert.equal((await owner.request({ type: 'update_config', config: { temperature: 0.2 } })).status, 'ok');
    await owner.next((f) => f.event === 'config.changed');
    assert.ok(!session.frames.some((f) => f.event === 'config.changed'));
    owner.close();
  });
});
