/**
 * The service's relay link against the real Node relay (src/relay) on loopback, the real service
 * (src/service.ts) with the fake OpenAI provider, and relayed clients speaking the e2e tunnel:
 * link state, relayed chat, what the relay sees, key admission and pairing, tamper, restarts, config edits.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { after, before, test } from 'node:test';
import { x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { SecureChannel, generateKeyPair, fromBase64url, toBase64url, type KeyPairText } from '../../src/tunnel';
import type { RelayLinkStatus } from '../../src/protocol';
import { PairingSecrets } from '../../src/transport/pairing/pairing-secrets';
import { pairProof } from '../../src/tunnel';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, startService, writeConfig, TEST_TOKEN, type RunningService } from '../helpers/service';
import { waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';
import { RELAY_TOKEN, RelayClient, startRelay, startTap, type RunningRelay, type Tap } from '../helpers/relay-link-harness';
import { readRecordedSession } from '../helpers/recorded-tunnel';
import { machineIdentityOf } from '../../src/transport/relay-link/machine-identity';

const FAST = { baseDelayMs: 50, maxDelayMs: 300, handshakeTimeoutMs: 2_000 };

let fake: FakeOpenAI;
let relay: RunningRelay;
let tap: Tap;
let svc: RunningService;
const clients: { close(): void }[] = [];

const relayChannel = (url: string, token = RELAY_TOKEN, name = 'relay') => ({ name, type: 'websocket', url, auth_token: token });
const baseConfig = () => ({ base_url: fake.url, model: 'fake-model', permission_mode: 'allow' });

async function lan(): Promise<TestClient> {
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  clients.push(client);
  return client;
}

async function relayStatus(): Promise<RelayLinkStatus[]> {
  const client = await lan();
  const reply = await client.request({ type: 'relay_status' });
  client.close();
  assert.equal(reply.status, 'ok');
  return (reply.data as { relays: RelayLinkStatus[] }).relays;
}

const waitState = (state: string, name = 'relay') => waitFor(() => svc.service.relay.status().find((s) => s.name === name && s.state === state), `relay link ${name} ${state}`, 10_000);

/** Registers a client key the way a phone app would (POST /ws/register). */
async function registerKey(name: string, keyPair: KeyPairText): Promise<{ machine_id: string; relay_url: string }> {
  const reply = await postJson(`${svc.httpUrl}/ws/register`, { machine_name: name, public_key: keyPair.publicKey }, { authorization: `Bearer ${svc.token}` });
  assert.equal(reply.status, 200, reply.text);
  return reply.body!.data as { machine_id: string; relay_url: string };
}

async function machineKey(): Promise<string> {
  const client = await lan();
  const reply = await client.request({ type: 'create_pairing' });
  client.close();
  return (reply.data as { machine_key: string }).machine_key;
}

async function relayedClient(keyPair = generateKeyPair(), localAddress?: string): Promise<RelayClient> {
  const { relay_url } = await registerKey(`phone-${keyPair.publicKey.slice(0, 6)}`, keyPair);
  // The phone connects to the relay itself, not through the tap: the tap records the machine side.
  const url = relay_url.replace(tap.wsUrl.replace('/ws', ''), relay.wsUrl.replace('/ws', ''));
  const client = await RelayClient.authed(url, keyPair, await machineKey(), svc.token, undefined, localAddress);
  clients.push(client);
  return client;
}

const clientUrl = (machineId: string) => `${relay.wsUrl}?machine_id=${machineId}`;

before(async () => {
  fake = await startFakeOpenAI();
  relay = await startRelay();
  tap = await startTap(relay.port);
  svc = await startService({ ...baseConfig(), channels: [relayChannel(tap.wsUrl)] }, { relay: FAST });
});

after(async () => {
  for (const client of clients) client.close();
  await svc?.dispose();
  await tap?.close();
  await relay?.close();
  await fake?.close();
});

test('the link registers and comes online; relay_status and GET /health/relay show it without the token', async () => {
  await waitState('online');
  const [status] = await relayStatus();
  assert.equal(status.name, 'relay');
  assert.equal(status.state, 'online');
  assert.equal(status.last_error, null);
  assert.equal(status.url, tap.wsUrl);
  const health = await fetch(`${svc.httpUrl}/health/relay`);
  const text = await health.text();
  assert.equal(health.status, 200);
  const body = JSON.parse(text) as { status: string; relays: { name: string; state: string }[] };
  assert.equal(body.status, 'ok');
  assert.deepEqual(
    body.relays.map((r) => [r.name, r.state]),
    [['relay', 'online']],
  );
  assert.ok(!text.includes(RELAY_TOKEN) && !text.includes(tap.wsUrl), 'no token, no url in the unauthenticated route');
  assert.ok(!JSON.stringify(status).includes(RELAY_TOKEN), 'relay_status never shows the token');
});

test('a relayed client chats end to end (streaming), and the relay never sees the plaintext or the token', async () => {
  const secretText = 'the launch code is PLAINTEXT-MARKER-7731';
  const replyText = 'acknowledged REPLY-MARKER-4410 in private';
  fake.script({ text: replyText, chunks: 4 });
  const before = tap.seen.length;
  const client = await relayedClient();
  const reply = await client.request({ type: 'chat', message: secretText, stream: true });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  assert.equal((reply.data as { response: string }).response, replyText);
  const deltas = [];
  for (;;) {
    const delta = await client.next((f) => f.event === 'chat.delta', 2_000).catch(() => undefined);
    if (!delta) break;
    deltas.push(delta.delta);
  }
  assert.equal(deltas.join(''), replyText, 'streamed pieces make the whole reply');
  const config = await client.request({ type: 'get_config' });
  assert.equal((config.data as { model: string }).model, 'fake-model');

  // The conversation is an ordinary one: LAN clients see it, with the relay as its source.
  const conversationId = (reply.data as { conversation_id: string }).conversation_id;
  const listed = await (await lan()).request({ type: 'list_conversations' });
  const conversation = (listed.data as { conversations: { id: string; source: string }[] }).conversations.find((c) => c.id === conversationId);
  assert.equal(conversation?.source, 'relay');

  const relayed = tap.seen.slice(before).join('\n') + client.raw.join('\n');
  assert.ok(relayed.includes('"e2e":"box"'), 'frames did pass through the relay');
  for (const secret of [secretText, 'PLAINTEXT-MARKER', replyText, 'REPLY-MARKER', TEST_TOKEN, 'get_config', 'fake-model']) {
    assert.ok(!relayed.includes(secret), `the relay never sees ${secret}`);
  }
  const log = await readFile(join(svc.dataDir, 'service.log'), 'utf8');
  assert.ok(!log.includes(RELAY_TOKEN) && !log.includes(TEST_TOKEN), 'no token in the service log');
});

test('a relayed client retries a failed turn (retry_turn): answered in place, the model reading the message once', async () => {
  const client = await relayedClient();
  fake.script({ status: 401 });
  const failed = await client.request({ type: 'chat', message: 'RETRY-MARKER relayed' });
  assert.equal(failed.status, 'error');
  const ended = await client.next((f) => f.event === 'turn.ended' && f.outcome === 'failed');
  const conversationId = String(ended.conversation_id);
  const messageId = String(ended.message_id);
  const before = fake.requests.length;
  fake.script({ text: 'answered through the relay' });
  const retried = await client.request({ type: 'retry_turn', conversation_id: conversationId, message_id: messageId, client_retry_id: 'relay-tap-1' });
  assert.equal(retried.status, 'ok', JSON.stringify(retried));
  assert.deepEqual(retried.data, { response: 'answered through the relay', conversation_id: conversationId });
  assert.equal(fake.requests.length, before + 1);
  const asked = (fake.requests[before].body as { messages: { role: string; content: unknown }[] }).messages;
  assert.equal(asked.filter((m) => m.role === 'user' && JSON.stringify(m.content).includes('RETRY-MARKER')).length, 1);
  const messages = ((await client.request({ type: 'get_messages', conversation_id: conversationId })).data as { messages: { role: string; content: string }[] }).messages;
  assert.deepEqual(
    messages.map((m) => m.role),
    ['user', 'assistant'],
  );
});

test('an export through the tunnel is the same text as over the LAN (its piece made as UTF-8 bytes, joined back for the tunnel)', async () => {
  const client = await relayedClient();
  const said = 'naïve "quoted" \\ back\\slash 漢字 😀 \u0001 \ud800 alone';
  const chatted = await client.request({ type: 'chat', message: said });
  const conversationId = (chatted.data as { conversation_id: string }).conversation_id;
  for (const format of ['markdown', 'json']) {
    const frame = { type: 'export_conversation', conversation_id: conversationId, format };
    const relayed = await client.request(frame);
    const local = await (await lan()).request(frame);
    assert.equal(relayed.status, 'ok', JSON.stringify(relayed));
    assert.deepEqual(relayed.data, local.data);
    // As stored: the lone surrogate became U+FFFD (s20, fix20b: what a restart reads back).
    const stored = said.toWellFormed();
    assert.ok((relayed.data as { text: string }).text.includes(format === 'json' ? JSON.stringify(stored).slice(1, -1) : stored));
  }
});

test("1,100 unauthenticated connects from one address: the owner's registered phone, elsewhere, still opens its tunnel and chats", async () => {
  await waitState('online');
  const machineId = await machineIdOfService();
  const flood: RelayClient[] = [];
  let refused = 0;
  try {
    for (let start = 0; start < 1100; start += 50) {
      const batch = await Promise.allSettled(Array.from({ length: 50 }, () => RelayClient.connect(clientUrl(machineId), '127.0.0.2')));
      for (const outcome of batch) {
        if (outcome.status === 'fulfilled') flood.push(outcome.value);
        else if (/Unexpected server response: 429/.test(String(outcome.reason))) refused += 1;
        else throw outcome.reason;
      }
    }
    fake.script({ text: 'through the flood' });
    const phone = await relayedClient(generateKeyPair(), '127.0.0.3');
    const reply = await phone.request({ type: 'chat', message: 'hello despite the flood' });
    assert.equal((reply.data as { response: string }).response, 'through the flood', JSON.stringify(reply));
    assert.ok(refused >= 1000, `${refused} of 1100 refused`);
  } finally {
    for (const client of flood) client.close();
  }
});

test('an unknown client key is refused with 4401 before anything else', async () => {
  const client = await RelayClient.connect(clientUrl(await machineIdOfService()));
  clients.push(client);
  await assert.rejects(client.handshake(generateKeyPair(), await machineKey()), /closed 4401/);
  assert.equal(client.closed?.code, 4401);
  assert.match(client.closed?.reason ?? '', /unknown client key/);
});

test('a plaintext first frame (no tunnel) is refused: the relay cannot drive the machine', async () => {
  const client = await RelayClient.connect(clientUrl(await machineIdOfService()));
  clients.push(client);
  client.sendRaw(JSON.stringify({ type: 'auth', token: svc.token }));
  const closed = await client.waitClose();
  assert.equal(closed.code, 4400);
});

test('a wrong token inside the tunnel gets invalid_token and the client is closed 4401', async () => {
  const keyPair = generateKeyPair();
  await registerKey('wrong-token-phone', keyPair);
  const client = await RelayClient.connect(clientUrl(await machineIdOfService()));
  clients.push(client);
  await client.handshake(keyPair, await machineKey());
  const reply = await client.request({ type: 'auth', token: 'not-the-token' });
  assert.equal(reply.code, 'invalid_token');
  assert.equal((await client.waitClose()).code, 4401);
});

test('wrong tokens through the relay are limited per client address behind it: rate_limited and 4429, other addresses unaffected', async () => {
  const keyPair = generateKeyPair();
  await registerKey('guessing-phone', keyPair);
  const machineId = await machineIdOfService();
  const open = async (localAddress: string) => {
    const client = await RelayClient.connect(clientUrl(machineId), localAddress);
    clients.push(client);
    await client.handshake(keyPair, await machineKey());
    return client;
  };
  const guess = async (token: string, localAddress: string) => {
    const client = await open(localAddress);
    const reply = await client.request({ type: 'auth', token });
    return { code: reply.code ?? reply.status, close: (await client.waitClose()).code };
  };
  for (let i = 0; i < 10; i += 1) assert.deepEqual(await guess(`guess-${i}`, '127.0.0.4'), { code: 'invalid_token', close: 4401 });
  // Over the limit: refused at the hello, before any key is looked up (the relay passes 4429 on).
  await assert.rejects(open('127.0.0.4'), /closed 4429/);
  // The same key from another address behind the relay, and a LAN client, still get in.
  const phone = await relayedClient(keyPair, '127.0.0.5');
  assert.equal((await phone.request({ type: 'get_config' })).status, 'ok');
  assert.equal((await (await lan()).request({ type: 'get_config' })).status, 'ok');
});

test('unknown client keys are failed logins of the address behind the relay: after 10, the hello is refused 4429', async () => {
  const machineId = await machineIdOfService();
  const hello = async () => {
    const client = await RelayClient.connect(clientUrl(machineId), '127.0.0.6');
    clients.push(client);
    await assert.rejects(client.handshake(generateKeyPair(), await machineKey()));
    return client.closed?.code;
  };
  for (let i = 0; i < 10; i += 1) assert.equal(await hello(), 4401);
  assert.equal(await hello(), 4429);
});

test('rotating auth_token closes relayed clients authenticated with the old one (4401)', async () => {
  const client = await relayedClient();
  const rotated = 'rotated-access-token-0123456789abcdef-XYZ';
  await svc.service.config.edit((raw) => void (raw.auth_token = rotated));
  try {
    assert.equal((await client.waitClose(5_000)).code, 4401);
  } finally {
    await svc.service.config.edit((raw) => void (raw.auth_token = TEST_TOKEN));
  }
});

test('a tampered frame ends the session (4400); so does a replayed one', async () => {
  for (const mangle of ['tamper', 'replay'] as const) {
    const client = await relayedClient();
    const box = client.channel!.seal(JSON.stringify({ type: 'get_config', id: 'x' }));
    if (mangle === 'tamper') {
      const bytes = fromBase64url((JSON.parse(box) as { c: string }).c)!;
      bytes[3] ^= 0x80;
      client.sendRaw(JSON.stringify({ e2e: 'box', c: toBase64url(bytes) }));
    } else {
      client.sendRaw(box);
      await client.next((f) => f.id === 'x');
      client.sendRaw(box);
    }
    const closed = await client.waitClose();
    assert.equal(closed.code, 4400, mangle);
  }
  // The link and other clients are unaffected.
  const fine = await relayedClient();
  assert.equal((await fine.request({ type: 'list_tools' })).status, 'ok');
});

test("forward secrecy: a relay that recorded a session cannot read it once both long-term keys leak (the phone's stored key pair, the machine's)", async () => {
  fake.script({ text: 'FS-REPLY-MARKER-5521' });
  const phone = generateKeyPair();
  const client = await relayedClient(phone);
  const reply = await client.request({ type: 'chat', message: 'FS-SECRET-MARKER-9034' });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  // What the relay forwarded of this session (its operator may keep it), and, later, every long-term secret.
  const recorded = [...client.raw];
  const machine = (await machineIdentityOf(svc.service.store)).keyPair;
  const read = readRecordedSession(recorded, phone, machine);
  assert.ok(read.boxes > 0, 'the session was recorded');
  assert.deepEqual(read.opened, [], 'no recorded frame opens with the long-term keys alone');
  const plain = read.opened.join('\n');
  for (const secret of [svc.token, 'FS-SECRET-MARKER', 'FS-REPLY-MARKER']) assert.ok(!plain.includes(secret), `the recording never yields ${secret}`);
});

test('a plaintext over 1 MiB in the tunnel: payload_too_large, then closed 4009', async () => {
  const client = await relayedClient();
  client.send(JSON.stringify({ type: 'chat', message: 'x'.repeat(1024 * 1024 + 10), id: 'big' }));
  const answer = await client.next((f) => f.status === 'error');
  assert.equal(answer.code, 'payload_too_large');
  assert.equal((await client.waitClose()).code, 4009);
});

test('pairing: create_pairing gives a one-time secret that admits one new key, then is spent', async () => {
  const lanClient = await lan();
  const reply = await lanClient.request({ type: 'create_pairing' });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  const info = reply.data as { machine_id: string; machine_key: string; relay_url: string; pairing_secret: string; expires_in: number; pairing_url: string };
  assert.equal(info.expires_in, 600);
  assert.equal(info.relay_url, `${tap.wsUrl}?machine_id=${info.machine_id}`);
  const url = new URL(info.pairing_url);
  assert.equal(url.origin, new URL(tap.wsUrl.replace('ws:', 'http:')).origin);
  assert.equal(url.pathname, '/');
  assert.equal(url.search, '', 'nothing in the query: it would reach the server');
  const fragment = new URLSearchParams(url.hash.slice(1));
  assert.deepEqual(
    Object.fromEntries(fragment),
    { relay: info.relay_url, machine_key: info.machine_key, pair: info.pairing_secret, name: hostname() },
    "the link holds no token; it names the computer for the phone's list of machines",
  );
  assert.ok(!info.pairing_url.includes(svc.token));

  // The phone proves the secret in its e2e hello (its key is registered), then spends it in `auth` for its own credential.
  const phone = generateKeyPair();
  const paired = await RelayClient.connect(clientUrl(info.machine_id));
  clients.push(paired);
  await paired.handshake(phone, info.machine_key, info.pairing_secret);
  const hello = await paired.request({ type: 'auth', pairing_secret: info.pairing_secret, device_name: 'relayed phone' });
  assert.equal(hello.status, 'ok', JSON.stringify(hello));
  const device = hello.data as { device_id: string; device_token: string };
  assert.equal((await paired.request({ type: 'get_config' })).status, 'ok');
  const listed = (await lanClient.request({ type: 'list_devices' })).data as { devices: { device_id: string; via: string }[] };
  assert.equal(listed.devices.find((d) => d.device_id === device.device_id)?.via, 'relay');

  // Spent: another key with the same secret is refused.
  const thief = await RelayClient.connect(clientUrl(info.machine_id));
  clients.push(thief);
  await assert.rejects(thief.handshake(generateKeyPair(), info.machine_key, info.pairing_secret), /closed 4401/);

  // The paired key is now registered: it comes back without a secret, with its device credential.
  const again = await RelayClient.authed(clientUrl(info.machine_id), phone, info.machine_key, device.device_token);
  clients.push(again);
  assert.equal((await again.request({ type: 'list_conversations' })).status, 'ok');
});

/** A phone paired through the relay: its key, its device credential, and its open tunnel. */
async function pairedPhone(
  lanClient: TestClient,
  name: string,
): Promise<{ keyPair: KeyPairText; machineKey: string; url: string; device: { device_id: string; device_token: string }; client: RelayClient }> {
  const info = (await lanClient.request({ type: 'create_pairing' })).data as { machine_id: string; machine_key: string; pairing_secret: string };
  const keyPair = generateKeyPair();
  const client = await RelayClient.connect(clientUrl(info.machine_id));
  clients.push(client);
  await client.handshake(keyPair, info.machine_key, info.pairing_secret);
  const hello = await client.request({ type: 'auth', pairing_secret: info.pairing_secret, device_name: name });
  assert.equal(hello.status, 'ok', JSON.stringify(hello));
  return { keyPair, machineKey: info.machine_key, url: clientUrl(info.machine_id), device: hello.data as { device_id: string; device_token: string }, client };
}

test('revoking a relay-paired device ends its relay access: its tunnel closes 4401 and its key can no longer open one; another phone is unaffected', async () => {
  await waitState('online');
  const lanClient = await lan();
  const lost = await pairedPhone(lanClient, 'lost phone');
  const kept = await pairedPhone(lanClient, 'kept phone');

  const revoked = await lanClient.request({ type: 'revoke_device', device_id: lost.device.device_id });
  assert.equal(revoked.status, 'ok', JSON.stringify(revoked));
  assert.equal((await lost.client.waitClose()).code, 4401, 'its open tunnel is closed at once');

  // Its key (kept in the phone's storage, or copied from it) no longer opens a tunnel: refused at the
  // end-to-end hello, before any credential is looked at, as any unknown key.
  const again = await RelayClient.connect(lost.url);
  clients.push(again);
  await assert.rejects(again.handshake(lost.keyPair, lost.machineKey), /closed 4401 unknown client key/);
  assert.ok(!again.raw.some((t) => t.includes('"welcome"')), 'no welcome for the revoked key');

  // The other phone: its open tunnel goes on, and it comes back with its key and credential.
  assert.equal((await kept.client.request({ type: 'list_conversations' })).status, 'ok');
  const keptAgain = await RelayClient.authed(kept.url, kept.keyPair, kept.machineKey, kept.device.device_token);
  clients.push(keptAgain);
  assert.equal((await keptAgain.request({ type: 'get_config' })).status, 'ok');
});

/**
 * A v1 tunnel opened as a phone by whoever holds the machine's secret key (a copy of its store) and the
 * phone's public key alone: v1 keys come from ss, which the machine's secret gives as well as the phone's.
 */
async function v1TunnelAsPhone(client: RelayClient, machine: KeyPairText, phonePublicKey: string): Promise<void> {
  const nonce = randomBytes(16);
  await client.exchange(JSON.stringify({ e2e: 'hello', v: 1, client_key: phonePublicKey, nonce: toBase64url(nonce) }), (welcome) => {
    const machineNonce = fromBase64url((JSON.parse(welcome) as { nonce: string }).nonce)!;
    const ss = x25519.getSharedSecret(fromBase64url(machine.secretKey)!, fromBase64url(phonePublicKey)!);
    const keys = hkdf(sha256, ss, concatBytes(nonce, machineNonce), utf8ToBytes('remote-assistant e2e v1'), 64);
    return new SecureChannel(keys.slice(0, 32), keys.slice(32, 64));
  });
}

test("v1 hellos are refused for a key that has spoken v2: a copy of the machine's store opens no tunnel as its phone", async () => {
  await waitState('online');
  const machine = (await machineIdentityOf(svc.service.store)).keyPair;
  // A phone paired through a v2 hello, whose device token a relay posing as the machine (with the
  // stolen secret) read from its `auth`: v2 only from the start.
  const paired = await pairedPhone(await lan(), 'v2 phone');
  const attacker = await RelayClient.connect(paired.url);
  clients.push(attacker);
  await assert.rejects(v1TunnelAsPhone(attacker, machine, paired.keyPair.publicKey), /closed 4400 .*v2/);
  assert.ok(!attacker.raw.some((t) => t.includes('"welcome"')), 'no welcome for the v1 hello');

  // A key registered with POST /ws/register (an older page's) still gets v1 until its first v2 session.
  const older = generateKeyPair();
  const { relay_url } = await registerKey('older-page-phone', older);
  const url = clientUrl(new URL(relay_url).searchParams.get('machine_id')!);
  const v1 = await RelayClient.connect(url);
  clients.push(v1);
  await v1TunnelAsPhone(v1, machine, older.publicKey);
  assert.equal((await v1.request({ type: 'auth', token: svc.token })).status, 'ok', 'a v1 session of a key that never spoke v2');
  const v2 = await RelayClient.authed(url, older, machine.publicKey, svc.token);
  clients.push(v2);
  await waitFor(() => svc.service.store.registrations.keys().find((k) => k.public_key === older.publicKey && k.e2e_v2), 'the key marked v2 after its first box');
  const again = await RelayClient.connect(url);
  clients.push(again);
  await assert.rejects(v1TunnelAsPhone(again, machine, older.publicKey), /closed 4400 .*v2/);
});

test("an old tab's v1 hellos of a key that has spoken v2 are no failed logins: the phone's address is not locked, an unknown key still counts", async () => {
  await waitState('online');
  const paired = await pairedPhone(await lan(), 'phone with an old tab');
  const address = '127.0.0.8';
  const v1Hello = async (clientKey: string) => {
    const client = await RelayClient.connect(paired.url, address);
    clients.push(client);
    client.sendRaw(JSON.stringify({ e2e: 'hello', v: 1, client_key: clientKey, nonce: toBase64url(randomBytes(16)) }));
    return (await client.waitClose()).code;
  };
  // More than the limit (10 failed logins a window): each refused for its version, none counted.
  for (let i = 0; i < 12; i += 1) assert.equal(await v1Hello(paired.keyPair.publicKey), 4400, `v1 hello ${i}`);
  const phone = await RelayClient.authed(paired.url, paired.keyPair, paired.machineKey, paired.device.device_token, undefined, address);
  clients.push(phone);
  assert.equal((await phone.request({ type: 'get_config' })).status, 'ok', 'the new tab from the same address gets in');
  // A key the machine does not know still counts: 10 of them lock the address.
  for (let i = 0; i < 10; i += 1) assert.equal(await v1Hello(generateKeyPair().publicKey), 4401, `unknown key ${i}`);
  assert.equal(await v1Hello(paired.keyPair.publicKey), 4429);
});

test("pairing the twin of a paired phone's key (bit 255 flipped: the same X25519 key) leaves the phone's registration and mark alone", async () => {
  await waitState('online');
  const lanClient = await lan();
  const victim = await pairedPhone(lanClient, 'victim phone');
  // Whoever holds a live pairing secret (a guest being paired) and knows the victim's public key.
  const { pairing_secret } = (await lanClient.request({ type: 'create_pairing' })).data as { pairing_secret: string };
  const twin = fromBase64url(victim.keyPair.publicKey)!;
  twin[31] ^= 0x80;
  const attacker = await RelayClient.connect(victim.url);
  clients.push(attacker);
  attacker.sendRaw(JSON.stringify({ e2e: 'hello', v: 1, client_key: toBase64url(twin), nonce: toBase64url(randomBytes(16)), pair: toBase64url(pairProof(pairing_secret, twin)) }));
  await waitFor(() => attacker.closed ?? attacker.raw.find((t) => t.includes('"welcome"')), 'the twin hello answered');
  assert.ok(
    svc.service.store.registrations.keys().some((k) => k.public_key === victim.keyPair.publicKey && k.e2e_v2),
    'the victim key is registered and marked',
  );
  const phone = await RelayClient.authed(victim.url, victim.keyPair, victim.machineKey, victim.device.device_token);
  clients.push(phone);
  assert.equal((await phone.request({ type: 'get_config' })).status, 'ok', 'the victim still gets in');
});

test('create_pairing: refused to session-token users; an unknown channel is not_found', async () => {
  const client = await lan();
  assert.equal((await client.request({ type: 'create_pairing', channel: 'nope' })).code, 'not_found');
  // A session-token user (POST /auth) must not obtain the access token through a pairing link.
  const { hashPassword } = await import('../../src/transport/auth/passwords');
  const config = JSON.parse(await readFile(join(svc.dataDir, 'service.json'), 'utf8')) as Record<string, unknown>;
  await writeConfig(svc.dataDir, { ...config, users: [{ username: 'ann', password_hash: await hashPassword('correct horse battery') }] });
  await waitFor(() => svc.service.config.current.users.length === 1, 'users reloaded');
  const login = await postJson(`${svc.httpUrl}/auth`, { username: 'ann', password: 'correct horse battery' });
  const sessionClient = await TestClient.authed(svc.wsUrl, (login.body!.data as { token: string }).token);
  clients.push(sessionClient);
  const refused = await sessionClient.request({ type: 'create_pairing' });
  assert.equal(refused.code, 'unauthorized');
  assert.ok(!JSON.stringify(refused).includes(svc.token));
});

test('pairing secrets expire after 10 minutes and are single-use', () => {
  let now = 1_000_000;
  const secrets = new PairingSecrets(() => now);
  const key = fromBase64url(generateKeyPair().publicKey)!;
  const { secret, expiresIn } = secrets.create();
  assert.equal(expiresIn, 600);
  now += 600_000;
  assert.equal(secrets.redeem(key, pairProof(secret, key)), false, 'expired at 10 minutes');
  const fresh = secrets.create().secret;
  now += 599_000;
  assert.equal(secrets.redeem(key, pairProof('another', key)), false, 'a wrong secret');
  assert.equal(secrets.redeem(key, pairProof(fresh, key)), true, 'valid just before 10 minutes');
  assert.equal(secrets.redeem(key, pairProof(fresh, key)), false, 'claimed: no second key');
  assert.equal(secrets.spend(fresh), true, 'the claiming phone spends it in auth for its device credential');
  assert.equal(secrets.spend(fresh), false, 'spent');
  const lan = secrets.create().secret;
  assert.equal(secrets.spend(lan), true, 'a LAN phone spends a secret without claiming it');
  assert.equal(secrets.redeem(key, pairProof(lan, key)), false, 'a spent secret admits no key');
});

test('relay restart: clients see the machine offline, the link reconnects with backoff, sessions start over', async () => {
  const client = await relayedClient();
  const keyPair = generateKeyPair();
  await registerKey('restart-phone', keyPair);
  const port = relay.port;
  await relay.close();
  await waitState('offline');
  const [down] = await relayStatus();
  assert.equal(down.state, 'offline');
  assert.ok(down.last_error, 'says why');
  assert.ok(down.retry_at, 'says when it retries');
  assert.ok(client.closed, 'the relayed client lost its socket');
  // The LAN keeps working while the relay is away.
  assert.equal((await (await lan()).request({ type: 'get_config' })).status, 'ok');

  relay = await startRelay(port);
  await waitState('online');
  const back = await RelayClient.authed(clientUrl(await machineIdOfService()), keyPair, await machineKey(), svc.token);
  clients.push(back);
  fake.script({ text: 'still here' });
  const reply = await back.request({ type: 'chat', message: 'after the restart' });
  assert.equal((reply.data as { response: string }).response, 'still here');
});

test("graceful stop answers a relayed client's chat in flight through the tunnel, then the machine goes offline; the service starts again", async () => {
  await waitState('online');
  const client = await relayedClient();
  fake.script({ text: 'answered while stopping', delayMs: 700 });
  const asked = fake.requests.length;
  const reply = client.request({ type: 'chat', message: 'a slow one', id: 'r1' });
  await fake.waitFor((requests) => requests.length > asked);
  await svc.stop();
  const answer = await reply;
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  assert.equal((answer.data as { response: string }).response, 'answered while stopping');
  await client.next((f) => f.relay === 'status' && f.machine === 'offline');
  assert.equal(client.closed, undefined, 'the client stays connected to the relay, as on any machine stop');
  assert.equal(svc.service.sessionCount, 0, 'the relayed session is closed');
  client.close();
  svc = await startService({}, { dataDir: svc.dataDir, keepConfig: true, relay: FAST });
});

test('machine restart: a waiting client gets offline then online, and redoes hello + auth', async () => {
  const keyPair = generateKeyPair();
  await registerKey('waiting-phone', keyPair);
  const key = await machineKey();
  const client = await RelayClient.authed(clientUrl(await machineIdOfService()), keyPair, key, svc.token);
  clients.push(client);
  await client.next((f) => f.relay === 'status' && f.machine === 'online');
  const dataDir = svc.dataDir;
  await svc.stop();
  await client.next((f) => f.relay === 'status' && f.machine === 'offline');
  assert.equal(client.closed, undefined, 'the client stays connected to the relay');
  svc = await startService({}, { dataDir, keepConfig: true, relay: FAST });
  await client.next((f) => f.relay === 'status' && f.machine === 'online');
  await client.handshake(keyPair, key);
  assert.equal((await client.request({ type: 'auth', token: svc.token })).status, 'ok');
  assert.equal((await client.request({ type: 'get_config' })).status, 'ok');
  assert.equal(await machineKey(), key, 'the machine key survives the restart (kept in the store)');
});

test('unreachable relay and wrong token: the service runs, the link says why; fixing service.json reconnects without restart', async () => {
  const config = JSON.parse(await readFile(join(svc.dataDir, 'service.json'), 'utf8')) as Record<string, unknown>;
  await writeConfig(svc.dataDir, {
    ...config,
    channels: [relayChannel(relay.wsUrl, 'x'.repeat(40), 'wrong-token'), relayChannel('ws://127.0.0.1:9/ws', RELAY_TOKEN, 'nowhere')],
  });
  const wrong = await waitFor(() => svc.service.relay.status().find((s) => s.name === 'wrong-token' && s.state === 'offline' && s.last_error), 'wrong token offline', 10_000);
  assert.match(wrong.last_error!, /401/);
  const nowhere = await waitFor(() => svc.service.relay.status().find((s) => s.name === 'nowhere' && s.state === 'offline' && s.last_error), 'unreachable offline', 10_000);
  assert.match(nowhere.last_error!, /unreachable|ECONNREFUSED/);
  assert.equal(
    svc.service.relay.status().some((s) => s.name === 'relay'),
    false,
    'the removed channel is gone',
  );
  assert.equal((await (await lan()).request({ type: 'list_tools' })).status, 'ok', 'the service is fine');

  await writeConfig(svc.dataDir, { ...config, channels: [relayChannel(relay.wsUrl, RELAY_TOKEN, 'wrong-token')] });
  await waitState('online', 'wrong-token');
  assert.deepEqual(
    svc.service.relay.status().map((s) => s.name),
    ['wrong-token'],
  );
});

async function machineIdOfService(): Promise<string> {
  const client = await lan();
  const reply = await client.request({ type: 'create_pairing' });
  client.close();
  return (reply.data as { machine_id: string }).machine_id;
}

test('a relayed client that never sends its hello is closed 4408', async () => {
  const client = await RelayClient.connect(clientUrl(await machineIdOfService()));
  clients.push(client);
  const closed = await client.waitClose();
  assert.equal(closed.code, 4408);
});

test('a relay that goes silent (sleep, lost network) is declared dead and the link reconnects', async () => {
  // A peer that accepts /register and the machine socket, then never sends a frame (no pong).
  const { WebSocketServer } = await import('ws');
  const http = await import('node:http');
  let sockets = 0;
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok","data":{}}'));
  const wss = new WebSocketServer({ server });
  wss.on('connection', () => (sockets += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  const silent = await startService({ channels: [relayChannel(`ws://127.0.0.1:${port}/ws`, RELAY_TOKEN, 'silent')] }, { relay: { ...FAST, pingEveryMs: 100, silenceMs: 400 } });
  try {
    const dead = await waitFor(() => silent.service.relay.status().find((s) => s.state === 'offline' && s.last_error?.includes('no frame')), 'silence detected', 10_000);
    assert.match(dead.last_error!, /no frame from the relay/);
    await waitFor(() => sockets >= 2, 'reconnected after the silence', 10_000);
  } finally {
    await silent.dispose();
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
