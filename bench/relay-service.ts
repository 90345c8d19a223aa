// The relay as the service sees it: round-trip latency of `get_config` through the Node relay and the
// e2e tunnel vs directly on the LAN socket, in one run (ratio), and how many relayed clients one
// machine serves with p99 under 50 ms. Real processes: node dist/relay.js and node dist/cli.js serve.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ClientHandshake, generateKeyPair, type KeyPairText, type SecureChannel } from '../src/tunnel';
import { P99_TARGET_MS, paced, type BenchClient as Client } from './paced';
import { ramp } from './relay';
import { fmt, percentile, spawnListening } from './util';

const TOKEN = 'bench-access-token-0123456789abcdef0123';
const RELAY_TOKEN = 'bench-relay-token-0123456789abcdef-RELAY';

/** Opens a socket; `first` resolves with the first frame matching `accept` (attached before 'open': the relay speaks at once). */
function opened(url: string, accept: (text: string) => boolean = () => false): Promise<{ ws: WebSocket; first: Promise<string> }> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const first = nextMessage(ws, accept);
  first.catch(() => undefined);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, first }));
    ws.once('error', reject);
  });
}

function nextMessage(ws: WebSocket, accept: (text: string) => boolean = () => true): Promise<string> {
  return new Promise((resolve, reject) => {
    const onMessage = (data: WebSocket.RawData) => {
      const text = data.toString();
      if (!accept(text)) return;
      ws.off('message', onMessage).off('close', onClose);
      resolve(text);
    };
    const onClose = (code: number) => {
      ws.off('message', onMessage);
      reject(new Error(`closed ${code}`));
    };
    ws.on('message', onMessage).once('close', onClose);
  });
}

async function directClient(port: number): Promise<Client> {
  const { ws } = await opened(`ws://127.0.0.1:${port}/ws`);
  ws.send(JSON.stringify({ type: 'auth', token: TOKEN }));
  await nextMessage(ws);
  const frame = JSON.stringify({ type: 'get_config' });
  return {
    async rt() {
      const started = performance.now();
      const answer = nextMessage(ws);
      ws.send(frame);
      await answer;
      return performance.now() - started;
    },
    close: () => ws.terminate(),
  };
}

async function relayedClient(url: string, keyPair: KeyPairText, machineKey: string): Promise<Client> {
  const { ws, first } = await opened(url, (text) => text.includes('"machine":"online"'));
  const notRelay = (text: string) => !text.includes('"relay"') && text !== 'pong';
  await first;
  const handshake = new ClientHandshake(keyPair, machineKey);
  const welcome = nextMessage(ws, notRelay);
  ws.send(handshake.hello());
  const channel: SecureChannel = handshake.complete(await welcome);
  const request = async (frame: string) => {
    const answer = nextMessage(ws, notRelay);
    ws.send(channel.seal(frame));
    return channel.open(await answer);
  };
  const auth = JSON.parse(await request(JSON.stringify({ type: 'auth', token: TOKEN }))) as { status: string };
  if (auth.status !== 'ok') throw new Error('relayed auth refused');
  const frame = JSON.stringify({ type: 'get_config' });
  return {
    async rt() {
      const started = performance.now();
      await request(frame);
      return performance.now() - started;
    },
    close: () => ws.terminate(),
  };
}

async function setUp(dir: string) {
  const relay = await spawnListening([join(__dirname, '..', 'dist', 'relay.js'), '--port', '0'], { AUTH_TOKEN: RELAY_TOKEN });
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, channels: [{ name: 'relay', type: 'websocket', url: `ws://127.0.0.1:${relay.port}/ws`, auth_token: RELAY_TOKEN }] }));
  const service = await spawnListening([join(__dirname, '..', 'dist', 'cli.js'), 'serve', '--data-dir', dir, '--port', '0']);
  const keyPair = generateKeyPair();
  const register = await fetch(`http://127.0.0.1:${service.port}/ws/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ machine_name: 'bench-phone', public_key: keyPair.publicKey }),
  });
  const { relay_url } = ((await register.json()) as { data: { relay_url: string } }).data;
  // The machine key: from create_pairing on the LAN socket (the pairing secret itself is not used).
  const { ws: lan } = await opened(`ws://127.0.0.1:${service.port}/ws`);
  lan.send(JSON.stringify({ type: 'auth', token: TOKEN }));
  await nextMessage(lan);
  lan.send(JSON.stringify({ type: 'create_pairing' }));
  const machineKey = (JSON.parse(await nextMessage(lan)) as { data: { machine_key: string } }).data.machine_key;
  lan.terminate();
  return { relay, service, keyPair, relayUrl: relay_url, machineKey };
}

export async function benchRelayService(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-relay-'));
  const { relay, service, keyPair, relayUrl, machineKey } = await setUp(dir);
  const results: Record<string, number> = {};
  try {
    const direct = await directClient(service.port);
    // The first relayed client waits for "online": the service's link may still be connecting.
    const relayed = await relayedClient(relayUrl, keyPair, machineKey);
    await paced([direct], 700);
    await paced([relayed], 700);
    // Alternate the two paths twice and pool the samples, to damp machine noise.
    const directSamples: number[] = [];
    const relaySamples: number[] = [];
    for (let round = 0; round < 2; round += 1) {
      directSamples.push(...(await paced([direct], 2500)));
      relaySamples.push(...(await paced([relayed], 2500)));
    }
    directSamples.sort((a, b) => a - b);
    relaySamples.sort((a, b) => a - b);
    direct.close();
    relayed.close();
    results.direct_p50_ms = percentile(directSamples, 50);
    results.direct_p99_ms = percentile(directSamples, 99);
    results.relay_p50_ms = percentile(relaySamples, 50);
    results.relay_p99_ms = percentile(relaySamples, 99);
    results.ratio_p50 = results.relay_p50_ms / results.direct_p50_ms;
    results.ratio_p99 = results.relay_p99_ms / results.direct_p99_ms;
    console.log(
      `get_config round trip, 1 client (${directSamples.length}+${relaySamples.length} samples): direct p50 ${fmt(results.direct_p50_ms)} ms p99 ${fmt(results.direct_p99_ms)} ms; ` +
        `through relay + e2e p50 ${fmt(results.relay_p50_ms)} ms p99 ${fmt(results.relay_p99_ms)} ms; ratio p50 ${fmt(results.ratio_p50)}, p99 ${fmt(results.ratio_p99)}`,
    );

    // The same bounded ramp as bench relay (two failed steps in a row end it), on the real service.
    const steps = [1, 16, 64, 128, 256, 512];
    const served = await ramp({ name: 'get_config via relay + e2e', open: () => relayedClient(relayUrl, keyPair, machineKey) }, steps);
    results.clients_p99_under_50ms = served;
    console.log(`relayed clients one machine serves with p99 < ${P99_TARGET_MS} ms: ${served}${served === steps[steps.length - 1] ? ' (or more; the ramp stops there)' : ''}`);
  } finally {
    await service.stop();
    await relay.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

if (require.main === module) {
  benchRelayService().then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
