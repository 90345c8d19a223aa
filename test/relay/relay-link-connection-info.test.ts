/**
 * The editor's Show Connection Info, relay part (src/extension/connection-info.ts, with the vscode test
 * double): it asks the running service for relay_status and a fresh pairing, and shows the link state
 * and the relay pairing QR beside the LAN addresses. The hosting window asks in process, through the
 * service's door as the owner (no loopback socket, no token); an attached window over its socket.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { hostname } from 'node:os';
import { LocalBackend, RemoteBackend } from '../../src/extension/backend';
import { Service } from '../../src/service';
import { lanPairingUrl } from '../../src/transport/pairing/lan-pairing';
import { startService, TEST_TOKEN, writeConfig, type RunningService } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { waitFor } from '../helpers/temp';
import { installVscodeDouble } from '../helpers/vscode-double';
import { TestClient } from '../helpers/ws-client';
import { RELAY_TOKEN, startRelay, type RunningRelay } from '../helpers/relay-link-harness';

installVscodeDouble();
type InfoModule = typeof import('../../src/extension/connection-info');
let info: InfoModule;
let relay: RunningRelay;
let svc: RunningService;
let plain: RunningService;

before(async () => {
  info = await import('../../src/extension/connection-info');
  relay = await startRelay();
  svc = await startService({ channels: [{ name: 'home-relay', type: 'websocket', url: relay.wsUrl, auth_token: RELAY_TOKEN }] }, { relay: { baseDelayMs: 50, maxDelayMs: 200 } });
  plain = await startService({});
});

after(async () => {
  await svc?.dispose();
  await plain?.dispose();
  await relay?.close();
});

const portOf = (s: RunningService) => Number(new URL(s.httpUrl).port);

test('the relay state and a one-time relay pairing come from the running service', async () => {
  await waitFor(() => svc.service.relay.status()[0]?.state === 'online', 'relay online', 10_000);
  const backend = new LocalBackend(svc.service);
  const relayInfo = await info.fetchRelayInfo(backend);
  assert.equal(relayInfo.error, undefined);
  assert.deepEqual(
    relayInfo.relays.map((r) => [r.name, r.state]),
    [['home-relay', 'online']],
  );
  assert.ok(relayInfo.pairing?.pairing_url.startsWith(`${relay.httpUrl}/#relay=`));
  assert.equal(svc.service.pairings.size, 1, 'one live pairing secret made for the QR');

  const lanLink = await info.fetchLanPairingLink(backend);
  assert.ok(lanLink, 'the host window gets a LAN pairing link from the service');
  assert.equal(svc.service.pairings.size, 2, 'and one secret for the LAN QR');
  const lanUrl = new URL(lanLink);
  const lanSecret = new URLSearchParams(lanUrl.hash.slice(1)).get('pair')!;
  assert.deepEqual(
    Object.fromEntries(new URLSearchParams(lanUrl.hash.slice(1))),
    { url: `ws://127.0.0.1:${portOf(svc)}/ws`, pair: lanSecret, name: hostname() },
    "the LAN link names the loopback-only service's address, holds the secret, no token, and the computer's name",
  );
  const phone = await TestClient.connect(svc.wsUrl);
  assert.equal((await phone.request({ type: 'auth', pairing_secret: lanSecret, device_name: '<b>Ada</b> phone' })).status, 'ok');
  phone.close();
  const devices = await info.fetchDevices(backend);
  assert.deepEqual(
    devices?.map((d) => d.device_name),
    ['<b>Ada</b> phone'],
  );
  const html = await info.connectionInfoHtml({ port: portOf(svc), addresses: ['192.168.1.20'], lanPairingLink: lanLink, lanAccess: true, relay: relayInfo, devices });
  assert.match(html, /Paired devices<\/h3><ul><li>&#60;b&#62;Ada&#60;\/b&#62; phone <small>\(LAN, last seen /, 'the paired phone listed, escaped');
  assert.match(html, /home-relay/);
  assert.match(html, /class="state online">online</);
  assert.match(html, /end-to-end encrypted/);
  assert.equal(html.match(/<svg/g)?.length, 2, 'two QR codes: relay and LAN');
  assert.ok(!html.includes(TEST_TOKEN) && !html.includes(RELAY_TOKEN), 'no token as text in the panel');
  assert.ok(!html.includes(relayInfo.pairing!.pairing_secret) && !html.includes(lanSecret), 'no pairing secret as text');
  backend.dispose();
});

test('an offline relay shows its error; no relay configured says how to add one; a refused command is an error, not a crash', async () => {
  await relay.close();
  await waitFor(() => svc.service.relay.status()[0]?.state === 'offline', 'relay offline', 10_000);
  const hostWindow = new LocalBackend(svc.service);
  const offline = await info.fetchRelayInfo(hostWindow);
  hostWindow.dispose();
  assert.equal(offline.relays[0].state, 'offline');
  const html = await info.connectionInfoHtml({ port: portOf(svc), addresses: [], lanAccess: false, relay: offline });
  assert.match(html, /class="state offline">offline</);
  assert.match(html, /last error: /);

  const plainWindow = new LocalBackend(plain.service);
  const none = await info.fetchRelayInfo(plainWindow);
  plainWindow.dispose();
  assert.deepEqual(none, { relays: [] });
  assert.match(await info.connectionInfoHtml({ port: portOf(plain), addresses: [], lanAccess: true, relay: none }), /No relay configured/);

  // A window that does not host: a refused command is an error, not a crash; no service at all is said so.
  const attached = await RemoteBackend.connect(plain.wsUrl, TEST_TOKEN);
  const refused = await info.fetchRelayInfo({ request: () => attached.request({ type: 'create_pairing', channel: 'no-such-relay' }) });
  attached.dispose();
  assert.match(refused.error ?? '', /no relay channel named no-such-relay/, 'the refusal is reported');
  const unreachable = await info.fetchRelayInfo(undefined);
  assert.match(unreachable.error ?? '', /not running/);
});

test('an attached window asks over its authenticated socket and gets the same answer', async () => {
  const attached = await RemoteBackend.connect(svc.wsUrl, TEST_TOKEN);
  const relayInfo = await info.fetchRelayInfo(attached);
  attached.dispose();
  assert.equal(relayInfo.error, undefined);
  assert.deepEqual(
    relayInfo.relays.map((r) => r.name),
    ['home-relay'],
  );
  assert.ok(relayInfo.pairing?.pairing_url, 'the access token may create a pairing');
});

test('the hosting window asks in process: no socket is opened (it works while nothing listens)', async () => {
  const temp = await tempDir('ra-info-');
  await writeConfig(temp.dir, { channels: [{ name: 'home-relay', type: 'websocket', url: 'ws://127.0.0.1:9/relay', auth_token: RELAY_TOKEN }] });
  // Opened, never started: no port to connect to, and no relay links yet (they start with the service).
  const service = await Service.open({ dataDir: temp.dir });
  const backend = new LocalBackend(service);
  try {
    assert.equal(service.listeningAddress, undefined);
    assert.deepEqual(await info.fetchRelayInfo(backend), { relays: [] }, 'answered, though nothing listens');
    const pairing = await backend.request({ type: 'create_pairing' });
    assert.equal(pairing.status, 'ok', 'the host window is the owner: create_pairing needs the access token on a socket');
    assert.match(String((pairing.data as { pairing_url: string }).pairing_url), /#relay=/);
    assert.equal(service.pairings.size, 1);
  } finally {
    backend.dispose();
    await service.stop();
    await temp.cleanup();
  }
});

test('the LAN pairing link opens the page the service serves at /', () => {
  const url = new URL(lanPairingUrl('192.168.1.20', 5000, 'tok'));
  assert.equal(url.pathname, '/');
  assert.equal(new URLSearchParams(url.hash.slice(1)).get('url'), 'ws://192.168.1.20:5000/ws');
});
