import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateKeyPair } from '../../src/tunnel';
import { hashPassword } from '../../src/transport/auth/passwords';
import { postJson, startService, type RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

const PASSWORD = 'correct horse battery staple';
let svc: RunningService;
let noRelay: RunningService;

before(async () => {
  const users = [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }];
  svc = await startService({
    users,
    session_ttl_seconds: 2,
    channels: { relay: { type: 'websocket', url: 'wss://relay.example.test/ws', auth_token: 'relay-secret-0123456789-0123456789' } },
  });
  noRelay = await startService({ users });
});
after(async () => {
  await svc?.dispose();
  await noRelay?.dispose();
});

describe('GET /health', () => {
  test('answers status and integer uptime, without envelope', async () => {
    const response = await fetch(`${svc.httpUrl}/health`);
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.deepEqual(Object.keys(body).sort(), ['status', 'uptime_seconds']);
    assert.equal(body.status, 'ok');
    assert.ok(Number.isInteger(body.uptime_seconds) && body.uptime_seconds >= 0);
  });

  test('an unknown route is 404 in the envelope', async () => {
    const response = await fetch(`${svc.httpUrl}/nowhere`);
    assert.equal(response.status, 404);
    assert.equal((await response.json()).code, 'not_found');
  });
});

describe('POST /auth', () => {
  test('a user of service.json gets a session token that works on the WebSocket until it expires (then closed 4401)', async () => {
    const reply = await postJson(`${svc.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
    assert.equal(reply.status, 200);
    const data = reply.body!.data as { token: string; expires_in: number };
    assert.equal(data.expires_in, 2);
    assert.ok(data.token.length >= 32);

    const client = await TestClient.connect(svc.wsUrl);
    const auth = await client.request({ type: 'auth', token: data.token });
    assert.equal((auth.data as { expires_in: number }).expires_in, 2);
    assert.equal((await client.request({ type: 'get_config' })).status, 'ok');
    // Closed at expiry, without waiting for the client's next command.
    assert.equal((await client.waitClose()).code, 4401);

    const again = await TestClient.connect(svc.wsUrl);
    assert.equal((await again.request({ type: 'auth', token: data.token })).code, 'invalid_token');
  });

  test('wrong password or unknown user: 401 invalid_token', async () => {
    for (const body of [
      { username: 'ada', password: 'wrong password' },
      { username: 'nobody', password: PASSWORD },
    ]) {
      const reply = await postJson(`${noRelay.httpUrl}/auth`, body, { 'x-forwarded-for': 'ignored' });
      assert.equal(reply.status, 401);
      assert.equal(reply.body!.code, 'invalid_token');
    }
  });

  test('malformed bodies: 400 invalid_request; huge: 413', async () => {
    const url = `${svc.httpUrl}/auth`;
    const cases: [unknown, Record<string, string>, number, RegExp][] = [
      ['{not json', {}, 400, /JSON/],
      [[1, 2], {}, 400, /object/],
      [{ username: 'ada' }, {}, 400, /password/],
      [{ username: 5, password: 'x' }, {}, 400, /username/],
      [{ username: 'ada', password: PASSWORD }, { 'content-type': 'text/plain' }, 400, /Content-Type/],
      ['x'.repeat(2 * 1024 * 1024), {}, 413, /exceeds/],
    ];
    for (const [body, headers, status, pattern] of cases) {
      const reply = await postJson(url, body, headers);
      assert.equal(reply.status, status, JSON.stringify(body).slice(0, 40));
      assert.equal(reply.body!.status, 'error');
      assert.match(String(reply.body!.error), pattern);
    }
  });

  test('10 failed logins from one address: 429 with Retry-After, even for the right password', async () => {
    // A service of its own: the limit counts every failed login of the address, the WebSocket's too.
    const fresh = await startService({ users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }] });
    try {
      for (let i = 0; i < 10; i += 1) {
        const reply = await postJson(`${fresh.httpUrl}/auth`, { username: 'ada', password: `guess-${i}` });
        assert.equal(reply.status, 401);
      }
      const blocked = await postJson(`${fresh.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
      assert.equal(blocked.status, 429);
      assert.equal(blocked.body!.code, 'rate_limited');
      assert.ok(Number(blocked.headers.get('retry-after')) > 0);
    } finally {
      await fresh.dispose();
    }
  });
});

describe('POST /ws/register', () => {
  const body = { machine_name: 'laptop', public_key: generateKeyPair().publicKey };

  test('needs a bearer token', async () => {
    assert.equal((await postJson(`${svc.httpUrl}/ws/register`, body)).status, 401);
    const wrong = await postJson(`${svc.httpUrl}/ws/register`, body, { authorization: 'Bearer wrong' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body!.code, 'invalid_token');
  });

  test('a session (password) token may not register device keys: 403 unauthorized', async () => {
    const login = await postJson(`${noRelay.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
    const token = (login.body!.data as { token: string }).token;
    const reply = await postJson(`${noRelay.httpUrl}/ws/register`, body, { authorization: `Bearer ${token}` });
    assert.equal(reply.status, 403, reply.text);
    assert.equal(reply.body!.code, 'unauthorized');
    assert.equal(noRelay.service.store.registrations.get('laptop'), undefined);
  });

  test('returns a stable machine_id and the relay url carrying it', async () => {
    const headers = { authorization: `Bearer ${svc.token}` };
    const first = await postJson(`${svc.httpUrl}/ws/register`, body, headers);
    assert.equal(first.status, 200, first.text);
    const data = first.body!.data as { machine_id: string; relay_url: string };
    const url = new URL(data.relay_url);
    assert.equal(url.origin + url.pathname, 'wss://relay.example.test/ws');
    assert.equal(url.searchParams.get('machine_id'), data.machine_id);
    const next = generateKeyPair().publicKey;
    const second = await postJson(`${svc.httpUrl}/ws/register`, { ...body, public_key: next }, headers);
    assert.equal((second.body!.data as { machine_id: string }).machine_id, data.machine_id);
    assert.equal(svc.service.store.registrations.get('laptop')?.public_key, next);
  });

  test('a key in standard base64 (with padding) is stored in its one base64url spelling', async () => {
    const key = generateKeyPair().publicKey;
    const standard = `${Buffer.from(key, 'base64url').toString('base64')}`;
    const reply = await postJson(`${svc.httpUrl}/ws/register`, { machine_name: 'tablet', public_key: standard }, { authorization: `Bearer ${svc.token}` });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(svc.service.store.registrations.get('tablet')?.public_key, key);
  });

  test('without a relay channel: 400 saying so', async () => {
    const reply = await postJson(`${noRelay.httpUrl}/ws/register`, body, { authorization: `Bearer ${noRelay.token}` });
    assert.equal(reply.status, 400);
    assert.match(String(reply.body!.error), /relay/);
  });

  test('bad bodies are 400', async () => {
    const headers = { authorization: `Bearer ${svc.token}` };
    assert.equal((await postJson(`${svc.httpUrl}/ws/register`, { machine_name: 'x' }, headers)).status, 400);
    assert.equal((await postJson(`${svc.httpUrl}/ws/register`, { machine_name: 1, public_key: body.public_key }, headers)).status, 400);
  });

  test('public_key must be a usable X25519 public key (32 bytes, base64url): 400 naming public_key, nothing stored', async () => {
    const headers = { authorization: `Bearer ${svc.token}` };
    const bytes = (n: number, fill = 7) => Buffer.alloc(n, fill).toString('base64url');
    const lowOrder = Buffer.alloc(32);
    lowOrder[0] = 1;
    const keys = ['k', bytes(31), bytes(33), `${body.public_key.slice(0, 40)}!!!`, bytes(32, 0), lowOrder.toString('base64url'), ' '.repeat(43)];
    for (const [i, public_key] of keys.entries()) {
      const reply = await postJson(`${svc.httpUrl}/ws/register`, { machine_name: `bad-${i}`, public_key }, headers);
      assert.equal(reply.status, 400, `${public_key}: ${reply.text}`);
      assert.equal(reply.body!.code, 'invalid_request');
      assert.match(String(reply.body!.error), /public_key/);
      assert.equal(svc.service.store.registrations.get(`bad-${i}`), undefined);
    }
  });
});

describe('allow_from', () => {
  test('an address outside allow_from gets 403 on HTTP and close 4403 on the WebSocket, before any credential', async () => {
    const guarded = await startService({ channels: [{ name: 'lan', type: 'tcp', port: 5000, allow_from: ['10.9.8.*'] }] });
    try {
      const health = await fetch(`${guarded.httpUrl}/health`);
      assert.equal(health.status, 403);
      assert.equal((await health.json()).code, 'unauthorized');
      const client = await TestClient.connect(guarded.wsUrl);
      assert.equal((await client.waitClose()).code, 4403);
    } finally {
      await guarded.dispose();
    }
  });
});
