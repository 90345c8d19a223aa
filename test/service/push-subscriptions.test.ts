// Web Push subscriptions (docs/protocol.md, "Web Push"): the VAPID key pair (made once, kept 0600 in the
// data directory, never logged nor in get_config), who may subscribe, and what a subscription must be:
// an attacker must not make the service POST to internal services, nor store garbage.
import assert from 'node:assert/strict';
import { createECDH, randomBytes, randomUUID } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import https from 'node:https';
import { join } from 'node:path';
import { parse } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../../src/transport/auth/passwords';
import { guardedAgent } from '../../src/channels/push/endpoint-guard';
import { startFakePushService, type FakePushService } from '../helpers/fake-push-service';
import { postJson, startService, type RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

const PASSWORD = 'correct horse battery staple';
let push: FakePushService;
let svc: RunningService;
let owner: TestClient;
let user: TestClient;

before(async () => {
  push = await startFakePushService();
  // A production-like service: private endpoints are refused (no test option).
  svc = await startService({ users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }] }, { push: { agent: new https.Agent({ ca: push.ca }) } });
  owner = await TestClient.authed(svc.wsUrl, svc.token);
  const login = await postJson(`${svc.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
  user = await TestClient.authed(svc.wsUrl, (login.body!.data as { token: string }).token);
});
after(async () => {
  owner?.close();
  user?.close();
  await svc?.dispose();
  await push?.close();
});

const keys = () => {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
};
const subscribe = (client: TestClient, subscription: unknown, extra: Record<string, unknown> = {}) =>
  client.request({ type: 'push_subscribe', device_id: randomUUID(), device_name: 'Android Chrome', subscription, ...extra });

describe('the VAPID key pair', () => {
  test('made on first use, kept 0600 in vapid.json, the same after a restart; the private key in no log line nor get_config', async () => {
    const info = await owner.request({ type: 'push_info' });
    assert.equal(info.status, 'ok', JSON.stringify(info));
    const publicKey = (info.data as { vapid_public_key: string }).vapid_public_key;
    assert.equal(Buffer.from(publicKey, 'base64url').length, 65, 'an uncompressed P-256 point');
    const file = join(svc.dataDir, 'vapid.json');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const stored = JSON.parse(await readFile(file, 'utf8')) as { public_key: string; private_key: string };
    assert.equal(stored.public_key, publicKey);

    const config = await owner.request({ type: 'get_config' });
    assert.ok(!JSON.stringify(config).includes(stored.private_key));
    await svc.stop();
    const again = await startService({}, { dataDir: svc.dataDir, keepConfig: true, push: { agent: new https.Agent({ ca: push.ca }) } });
    try {
      const client = await TestClient.authed(again.wsUrl, again.token);
      const second = await client.request({ type: 'push_info' });
      assert.equal((second.data as { vapid_public_key: string }).vapid_public_key, publicKey, 'kept across a restart');
      // The private key in a log field (as a careless line might put it) is redacted by value too.
      again.service.logger.info('test.line', { note: `key ${stored.private_key}` });
      client.close();
    } finally {
      await again.stop();
    }
    const log = await readFile(join(svc.dataDir, 'service.log'), 'utf8');
    assert.ok(log.includes('test.line'));
    assert.ok(!log.includes(stored.private_key), 'the private key is never in the log');
    svc = await startService({}, { dataDir: svc.dataDir, keepConfig: true, push: { agent: new https.Agent({ ca: push.ca }) } });
    owner.close();
    user.close();
    owner = await TestClient.authed(svc.wsUrl, svc.token);
    const login = await postJson(`${svc.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
    user = await TestClient.authed(svc.wsUrl, (login.body!.data as { token: string }).token);
  });
});

describe('subscriptions an attacker would send are refused', () => {
  const cases: [string, () => unknown, RegExp][] = [
    ['an http: endpoint', () => ({ endpoint: 'http://push.example.com/x', keys: keys() }), /https/],
    ['a loopback IP literal', () => ({ endpoint: 'https://127.0.0.1:8443/x', keys: keys() }), /private|loopback|local/],
    ['localhost', () => ({ endpoint: 'https://localhost/x', keys: keys() }), /private|loopback|local/],
    ['a sub-domain of localhost', () => ({ endpoint: 'https://push.localhost/x', keys: keys() }), /private|loopback|local/],
    ['a private address', () => ({ endpoint: 'https://10.0.0.8/x', keys: keys() }), /private|loopback|local/],
    ['the cloud metadata address (link-local)', () => ({ endpoint: 'https://169.254.169.254/latest', keys: keys() }), /private|loopback|local/],
    ['an IPv6 loopback', () => ({ endpoint: 'https://[::1]/x', keys: keys() }), /private|loopback|local/],
    ['an IPv4-mapped IPv6 loopback', () => ({ endpoint: 'https://[::ffff:127.0.0.1]/x', keys: keys() }), /private|loopback|local/],
    ['a unique-local IPv6', () => ({ endpoint: 'https://[fd00::1]/x', keys: keys() }), /private|loopback|local/],
    // Routed to IPv4 (or a site's own network) where a 6to4 relay, a local NAT64 or site-local routing exists.
    ['attack: an IPv4-compatible IPv6 loopback (::127.0.0.1)', () => ({ endpoint: 'https://[::127.0.0.1]/x', keys: keys() }), /private|loopback|local/],
    ['attack: a 6to4 address of 10.0.0.1', () => ({ endpoint: 'https://[2002:a00:1::1]/x', keys: keys() }), /private|loopback|local/],
    ['attack: a local-use NAT64 address of 127.0.0.1', () => ({ endpoint: 'https://[64:ff9b:1::7f00:1]/x', keys: keys() }), /private|loopback|local/],
    ['attack: a site-local IPv6', () => ({ endpoint: 'https://[fec0::1]/x', keys: keys() }), /private|loopback|local/],
    ['a decimal IPv4 (127.0.0.1)', () => ({ endpoint: 'https://2130706433/x', keys: keys() }), /private|loopback|local/],
    // The push library reads the endpoint with the legacy url.parse, which stops a host at `;` (and
    // does not decode %2e): these passed the WHATWG checks as public names and were sent to 127.0.0.1.
    ['attack: a name the push library reads as a loopback IP literal (127.0.0.1;.push.example.com)', () => ({ endpoint: 'https://127.0.0.1;.push.example.com/x', keys: keys() }), /host/],
    ['attack: a host that is not a DNS name (127.0.0.1{.push.example.com)', () => ({ endpoint: 'https://10.0.0.8{.push.example.com/x', keys: keys() }), /host/],
    ['credentials in the URL', () => ({ endpoint: 'https://user:pw@push.example.com/x', keys: keys() }), /credentials/],
    ['an endpoint over 2048 characters', () => ({ endpoint: `https://push.example.com/${'a'.repeat(2100)}`, keys: keys() }), /endpoint/],
    ['not a URL', () => ({ endpoint: 'https://', keys: keys() }), /endpoint/],
    ['a p256dh of the wrong length', () => ({ endpoint: 'https://push.example.com/x', keys: { ...keys(), p256dh: randomBytes(33).toString('base64url') } }), /p256dh/],
    [
      'a p256dh that is not a point on P-256',
      () => ({ endpoint: 'https://push.example.com/x', keys: { ...keys(), p256dh: Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url') } }),
      /p256dh/,
    ],
    ['an auth secret of 8 bytes', () => ({ endpoint: 'https://push.example.com/x', keys: { ...keys(), auth: randomBytes(8).toString('base64url') } }), /auth/],
    ['keys missing', () => ({ endpoint: 'https://push.example.com/x' }), /keys/],
  ];
  for (const [what, subscription, message] of cases) {
    test(what, async () => {
      const before = ((await owner.request({ type: 'list_push_devices' })).data as { devices: unknown[] }).devices.length;
      const reply = await subscribe(owner, subscription());
      assert.equal(reply.status, 'error', JSON.stringify(reply));
      assert.equal(reply.code, 'invalid_request');
      assert.match(String(reply.error), message);
      const after = ((await owner.request({ type: 'list_push_devices' })).data as { devices: unknown[] }).devices.length;
      assert.equal(after, before, 'nothing stored');
    });
  }

  test('attack: an endpoint with %2e in its host is sent to the name it was checked as, not to the IP literal before it', async () => {
    // WHATWG reads 127.0.0.1%2epush.example.com as the public name 127.0.0.1.push.example.com; the push
    // library's url.parse read the raw text as host 127.0.0.1 (no DNS lookup, so no guard) and POSTed there.
    // The endpoint is stored as checked (its href), so the sender resolves that name (through the guard).
    const device = randomUUID();
    const reply = await owner.request({ type: 'push_subscribe', device_id: device, device_name: 'odd', subscription: { endpoint: 'https://127.0.0.1%2epush.example.com/x', keys: keys() } });
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    const stored = svc.service.store.pushDevices.get(device)!;
    assert.equal(parse(stored.endpoint).hostname, '127.0.0.1.push.example.com', 'what is sent to is the host that was checked');
    await owner.request({ type: 'push_unsubscribe', device_id: device });
  });

  test('a bad device_id or device_name is invalid_request', async () => {
    const good = { endpoint: 'https://push.example.com/x', keys: keys() };
    for (const extra of [{ device_id: '' }, { device_id: 'a/../b' }, { device_id: 'x'.repeat(200) }, { device_name: '' }, { device_name: 'n'.repeat(200) }]) {
      const reply = await subscribe(owner, good, extra);
      assert.equal(reply.code, 'invalid_request', JSON.stringify(extra));
    }
  });

  test('a webhook account may not subscribe nor use any push command', async () => {
    const session = svc.service.openSession({ source: { kind: 'webhook', account: 'alpha' }, canAnswerPermissions: false, send: () => undefined });
    try {
      for (const frame of [
        { type: 'push_info' },
        { type: 'push_subscribe', device_id: randomUUID(), device_name: 'hook', subscription: { endpoint: 'https://push.example.com/x', keys: keys() } },
        { type: 'list_push_devices' },
        { type: 'push_test' },
        { type: 'client_state', visible: true },
      ]) {
        const reply = await session.request(frame);
        assert.equal(reply.status, 'error', frame.type);
        assert.equal((reply as { code: string }).code, 'unauthorized', frame.type);
      }
    } finally {
      session.close();
    }
  });

  test('at most 20 devices; a device re-subscribing replaces its subscription, not a new device', async () => {
    const existing = ((await owner.request({ type: 'list_push_devices' })).data as { devices: { device_id: string }[] }).devices;
    for (const device of existing) await owner.request({ type: 'push_unsubscribe', device_id: device.device_id });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const id = randomUUID();
      ids.push(id);
      const reply = await owner.request({ type: 'push_subscribe', device_id: id, device_name: `phone ${i}`, subscription: { endpoint: `https://push.example.com/${i}`, keys: keys() } });
      assert.equal(reply.status, 'ok', JSON.stringify(reply));
    }
    const again = await owner.request({ type: 'push_subscribe', device_id: ids[0], device_name: 'phone 0', subscription: { endpoint: 'https://push.example.com/new', keys: keys() } });
    assert.equal(again.status, 'ok', 're-subscribing an existing device is not a 21st');
    const over = await subscribe(owner, { endpoint: 'https://push.example.com/21', keys: keys() });
    assert.equal(over.code, 'invalid_request');
    assert.match(String(over.error), /20/);
    const listed = ((await owner.request({ type: 'list_push_devices' })).data as { devices: { device_id: string; endpoint_origin: string }[] }).devices;
    assert.equal(listed.length, 20);
    assert.ok(
      listed.every((d) => d.endpoint_origin === 'https://push.example.com'),
      'only the origin is shown: the path is the capability',
    );
    assert.ok(!JSON.stringify(listed).includes('/new'));
    for (const id of ids) await owner.request({ type: 'push_unsubscribe', device_id: id });
  });

  test("a session user may subscribe its own device but not change or remove the owner's", async () => {
    const ownerDevice = randomUUID();
    await owner.request({ type: 'push_subscribe', device_id: ownerDevice, device_name: 'owner phone', subscription: { endpoint: 'https://push.example.com/o', keys: keys() } });
    const mine = await subscribe(user, { endpoint: 'https://push.example.com/u', keys: keys() });
    assert.equal(mine.status, 'ok', JSON.stringify(mine));
    const taken = await user.request({ type: 'push_subscribe', device_id: ownerDevice, device_name: 'taken', subscription: { endpoint: 'https://push.example.com/evil', keys: keys() } });
    assert.equal(taken.code, 'unauthorized', 'push_subscribe');
    // Another person's device is, to a session user, an unknown one (s36: its existence is not told).
    assert.equal((await user.request({ type: 'push_settings', device_id: ownerDevice, events: { prompt: false } })).code, 'not_found', 'push_settings');
    assert.deepEqual((await user.request({ type: 'push_unsubscribe', device_id: ownerDevice })).data, { removed: false }, 'push_unsubscribe');
    const listed = ((await owner.request({ type: 'list_push_devices' })).data as { devices: { device_id: string; device_name: string; events: { prompt: boolean } }[] }).devices;
    const device = listed.find((d) => d.device_id === ownerDevice)!;
    assert.equal(device.device_name, 'owner phone');
    assert.equal(device.events.prompt, true);
  });

  test("attack: a session user may not push_test the owner's device, and push_test of every device leaves the owner's out", async () => {
    // Each push_test makes the owner's phone ring (no limit), and a push service rate-limits the VAPID
    // key: the owner's real prompts would then be refused.
    const ownerDevice = randomUUID();
    await owner.request({ type: 'push_subscribe', device_id: ownerDevice, device_name: 'owner phone', subscription: { endpoint: 'https://push.example.com/o2', keys: keys() } });
    const direct = await user.request({ type: 'push_test', device_id: ownerDevice });
    assert.equal(direct.code, 'not_found', JSON.stringify(direct));
    const every = await user.request({ type: 'push_test' });
    assert.equal(every.status, 'ok', JSON.stringify(every));
    const tested = (every.data as { results: { device_id: string }[] }).results.map((r) => r.device_id);
    assert.ok(!tested.includes(ownerDevice), "the owner's device is not among those a session user tests");
    await owner.request({ type: 'push_unsubscribe', device_id: ownerDevice });
  });

  test('push_settings and push_unsubscribe of an unknown device: not_found / removed false', async () => {
    assert.equal((await owner.request({ type: 'push_settings', device_id: randomUUID(), content_blind: true })).code, 'not_found');
    const removed = await owner.request({ type: 'push_unsubscribe', device_id: randomUUID() });
    assert.deepEqual(removed.data, { removed: false });
  });
});

test('when sending, a host name that resolves to a private address is not connected to (DNS pointing inside)', async () => {
  // `localhost` resolves to loopback through the system resolver, as an attacker's name could.
  const agent = guardedAgent();
  try {
    const port = new URL(push.origin).port;
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => {
      const request = https.request({ host: 'localhost', port, path: '/push/x', method: 'POST', agent, ca: push.ca }, () => resolve(new Error('connected') as NodeJS.ErrnoException));
      request.on('error', resolve);
      request.end();
    });
    assert.equal(error.code, 'EPRIVATEADDRESS');
    assert.equal(push.attempts, 0, 'the fake push service on loopback was never reached');
  } finally {
    agent.destroy();
  }
});
