/**
 * Devices, not a shared master key (issue 12; docs/protocol.md, "Devices"): a pairing carries a one-time
 * secret, never the access token; the phone spends it for its own credential; the owner lists and revokes
 * devices, and a revoked device's open socket is closed 4401 at once while the others go on.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { hashPassword } from '../../src/transport/auth/passwords';
import { startFakePushService, type FakePushService } from '../helpers/fake-push-service';
import { postJson, startService, type RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

const PASSWORD = 'correct horse battery staple';
let svc: RunningService;
let push: FakePushService;
let owner: TestClient;
const clients: TestClient[] = [];

before(async () => {
  push = await startFakePushService();
  svc = await startService({ users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }] }, { push: { allowPrivateEndpoints: true, agent: new https.Agent({ ca: push.ca }) } });
  owner = await TestClient.authed(svc.wsUrl, svc.token);
  clients.push(owner);
});
after(async () => {
  for (const client of clients) client.close();
  await svc?.dispose();
  await push?.close();
});

const connect = async () => {
  const client = await TestClient.connect(svc.wsUrl);
  clients.push(client);
  return client;
};

async function newSecret(): Promise<string> {
  const answer = await owner.request({ type: 'create_lan_pairing' });
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  const secret = (answer.data as { pairing_secret: string }).pairing_secret;
  assert.ok(!secret.includes(svc.token));
  return secret;
}

/** Pairs a phone with a fresh secret: its socket (authenticated as the device) and its credential. */
async function pairPhone(deviceId: string, deviceName: string) {
  const phone = await connect();
  const hello = await phone.request({ type: 'auth', pairing_secret: await newSecret(), device_id: deviceId, device_name: deviceName });
  assert.equal(hello.status, 'ok', JSON.stringify(hello));
  const data = hello.data as { device_id: string; device_token: string; expires_in: number | null };
  assert.equal(data.device_id, deviceId);
  assert.ok(data.device_token && data.device_token !== svc.token, 'a credential of its own');
  return { phone, token: data.device_token };
}

test('a pairing secret is spent for a device credential that works on its own, once', async () => {
  const secret = await newSecret();
  const phone = await connect();
  const hello = await phone.request({ type: 'auth', pairing_secret: secret, device_id: 'phone-one', device_name: 'Pixel' });
  assert.equal(hello.status, 'ok', JSON.stringify(hello));
  const { device_token } = hello.data as { device_token: string };
  const listed = await phone.request({ type: 'list_conversations' });
  assert.equal(listed.status, 'ok', 'the pairing socket is in at once');

  const again = await TestClient.authed(svc.wsUrl, device_token);
  clients.push(again);
  assert.equal((await again.request({ type: 'list_devices' })).status, 'ok', 'a device is the owner’s');

  const replay = await connect();
  const refused = await replay.request({ type: 'auth', pairing_secret: secret, device_name: 'thief' });
  assert.equal(refused.code, 'invalid_token');
  assert.equal((await replay.waitClose()).code, 4401, 'a spent secret is refused');

  const devices = (await owner.request({ type: 'list_devices' })).data as {
    devices: { device_id: string; device_name: string; via: string; paired_at: string; last_seen: string | null; push: boolean }[];
  };
  const row = devices.devices.find((d) => d.device_id === 'phone-one');
  assert.ok(row, JSON.stringify(devices));
  assert.equal(row.device_name, 'Pixel');
  assert.equal(row.via, 'lan');
  assert.equal(row.push, false);
  assert.ok(!JSON.stringify(devices).includes(device_token), 'the list never shows a credential');
});

test('revoking a device closes its open socket 4401, refuses its credential after, removes its push subscription, and leaves the others alone', async () => {
  const lost = await pairPhone('lost-phone', 'Lost');
  const kept = await pairPhone('kept-phone', 'Kept');
  const subscribed = await lost.phone.request({ type: 'push_subscribe', device_id: 'lost-phone', device_name: 'Lost', subscription: push.subscription() });
  assert.equal(subscribed.status, 'ok', JSON.stringify(subscribed));
  const before = (await owner.request({ type: 'list_devices' })).data as { devices: { device_id: string; push: boolean }[] };
  assert.equal(before.devices.find((d) => d.device_id === 'lost-phone')?.push, true);

  const revoked = await owner.request({ type: 'revoke_device', device_id: 'lost-phone' });
  assert.deepEqual(revoked.data, { revoked: true });
  assert.equal((await lost.phone.waitClose()).code, 4401, 'the lost phone’s socket closed at once');

  const retry = await connect();
  assert.equal((await retry.request({ type: 'auth', token: lost.token })).code, 'invalid_token');
  assert.equal((await retry.waitClose()).code, 4401);

  assert.equal((await kept.phone.request({ type: 'list_conversations' })).status, 'ok', 'another device unaffected');
  assert.equal(kept.phone.closed, undefined);
  const pushDevices = (await owner.request({ type: 'list_push_devices' })).data as { devices: { device_id: string }[] };
  assert.ok(!pushDevices.devices.some((d) => d.device_id === 'lost-phone'), 'its push subscription is gone');
  const after = (await owner.request({ type: 'list_devices' })).data as { devices: { device_id: string }[] };
  assert.deepEqual(
    after.devices.map((d) => d.device_id).filter((id) => id.endsWith('-phone')),
    ['kept-phone'],
  );
  assert.equal((await owner.request({ type: 'revoke_device', device_id: 'lost-phone' })).code, 'not_found');
});

test('a session (password) user may neither list nor revoke devices, nor make a pairing', async () => {
  const target = await pairPhone('owners-phone', 'Owner');
  const login = await postJson(`${svc.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
  const user = await TestClient.authed(svc.wsUrl, (login.body!.data as { token: string }).token);
  clients.push(user);
  assert.equal((await user.request({ type: 'list_devices' })).code, 'unauthorized');
  assert.equal((await user.request({ type: 'revoke_device', device_id: 'owners-phone' })).code, 'unauthorized');
  assert.equal((await user.request({ type: 'create_lan_pairing' })).code, 'unauthorized');
  assert.equal((await target.phone.request({ type: 'list_conversations' })).status, 'ok', 'the device was not revoked');
});

test('bad device commands get clear errors', async () => {
  assert.equal((await owner.request({ type: 'revoke_device' })).code, 'invalid_request');
  assert.equal((await owner.request({ type: 'revoke_device', device_id: 'no such/device' })).code, 'invalid_request');
});

test('a device credential survives a restart, records when it was last seen, and outlives a rotated access token', async () => {
  const first = await startService({});
  const opener = await TestClient.authed(first.wsUrl, first.token);
  const { pairing_secret } = (await opener.request({ type: 'create_lan_pairing' })).data as { pairing_secret: string };
  const phone = await TestClient.connect(first.wsUrl);
  const { device_token } = (await phone.request({ type: 'auth', pairing_secret, device_id: 'durable' })).data as { device_token: string };
  opener.close();
  phone.close();
  await first.stop();

  const second = await startService({}, { dataDir: first.dataDir, keepConfig: true });
  try {
    const back = await TestClient.authed(second.wsUrl, device_token);
    const [row] = ((await back.request({ type: 'list_devices' })).data as { devices: { device_id: string; last_seen: string | null }[] }).devices;
    assert.equal(row.device_id, 'durable');
    assert.ok(row.last_seen, 'last seen recorded');
    const ownerSocket = await TestClient.authed(second.wsUrl, second.token);
    const file = join(second.dataDir, 'service.json');
    await writeFile(file, JSON.stringify({ ...JSON.parse(await readFile(file, 'utf8')), auth_token: 'a-brand-new-access-token-0123456789abcdef' }));
    assert.equal((await ownerSocket.waitClose()).code, 4401, 'the access token rotated');
    assert.equal((await back.request({ type: 'list_conversations' })).status, 'ok', 'the device does not hold the access token');
    back.close();
  } finally {
    await second.dispose();
    await first.dispose();
  }
});
