/**
 * The editor's Show Connection Info, relay part (src/extension/connection-info.ts, with the vscode test
 * double): it asks the running service for relay_status and a fresh pairing, and shows the link state
 * and the relay pairing QR beside the LAN addresses.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startService, TEST_TOKEN, type RunningService } from './helpers/service';
import { waitFor } from './helpers/temp';
import { installVscodeDouble } from './helpers/vscode-double';
import { RELAY_TOKEN, startRelay, type RunningRelay } from './relay-link-harness';

installVscodeDouble();
type InfoModule = typeof import('../src/extension/connection-info');
let info: InfoModule;
let relay: RunningRelay;
let svc: RunningService;
let plain: RunningService;

before(async () => {
  info = await import('../src/extension/connection-info');
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
  const relayInfo = await info.fetchRelayInfo(portOf(svc), TEST_TOKEN);
  assert.equal(relayInfo.error, undefined);
  assert.deepEqual(relayInfo.relays.map((r) => [r.name, r.state]), [['home-relay', 'online']]);
  assert.ok(relayInfo.pairing?.pairing_url.startsWith(`${relay.httpUrl}/#relay=`));
  assert.equal(svc.service.pairings.size, 1, 'one live pairing secret made for the QR');

  const html = await info.connectionInfoHtml({ port: portOf(svc), addresses: ['192.168.1.20'], token: TEST_TOKEN, lanAccess: true, relay: relayInfo });
  assert.match(html, /home-relay/);
  assert.match(html, /class="state online">online</);
  assert.match(html, /end-to-end encrypted/);
  assert.equal(html.match(/<svg/g)?.length, 2, 'two QR codes: relay and LAN');
  assert.ok(!html.includes(TEST_TOKEN) && !html.includes(RELAY_TOKEN), 'no token as text in the panel');
  assert.ok(!html.includes(relayInfo.pairing!.pairing_secret), 'no pairing secret as text');
});

test('an offline relay shows its error; no relay configured says how to add one; a wrong token is an error, not a crash', async () => {
  await relay.close();
  await waitFor(() => svc.service.relay.status()[0]?.state === 'offline', 'relay offline', 10_000);
  const offline = await info.fetchRelayInfo(portOf(svc), TEST_TOKEN);
  assert.equal(offline.relays[0].state, 'offline');
  const html = await info.connectionInfoHtml({ port: portOf(svc), addresses: [], token: TEST_TOKEN, lanAccess: false, relay: offline });
  assert.match(html, /class="state offline">offline</);
  assert.match(html, /last error: /);

  const none = await info.fetchRelayInfo(portOf(plain), TEST_TOKEN);
  assert.deepEqual(none, { relays: [] });
  assert.match(await info.connectionInfoHtml({ port: portOf(plain), addresses: [], token: TEST_TOKEN, lanAccess: true, relay: none }), /No relay configured/);

  const refused = await info.fetchRelayInfo(portOf(plain), 'wrong-token');
  assert.match(refused.error ?? '', /invalid token/);
  const unreachable = await info.fetchRelayInfo(9, TEST_TOKEN);
  assert.ok(unreachable.error);
});

test('the LAN pairing link opens the page the service serves at /', () => {
  const url = new URL(info.lanPairingUrl('192.168.1.20', 5000, 'tok'));
  assert.equal(url.pathname, '/');
  assert.equal(new URLSearchParams(url.hash.slice(1)).get('url'), 'ws://192.168.1.20:5000/ws');
});
