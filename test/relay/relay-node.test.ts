import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import WebSocket from 'ws';
import { relaySuite } from '../helpers/relay-suite';
import { TestMachine, TestRelayClient, UpgradeRefused } from '../helpers/relay-peers';
import { NODE_RELAY, TEST_AUTH_TOKEN, register, startNodeRelay } from '../helpers/relay-targets';

relaySuite('node', startNodeRelay);

function runRelay(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [NODE_RELAY, '--port', '0'], { env: { ...process.env, AUTH_TOKEN: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output })));
}

describe('relay (node) process', () => {
  test('refuses to start without an AUTH_TOKEN of at least 32 characters, without echoing it', { timeout: 20_000 }, async () => {
    const short = 'short-token-0123456789';
    const refused = await runRelay({ AUTH_TOKEN: short });
    assert.notEqual(refused.code, 0);
    assert.match(refused.output, /AUTH_TOKEN must be at least 32 characters/);
    assert.ok(!refused.output.includes(short));
    const unset = await runRelay({});
    assert.notEqual(unset.code, 0);
    assert.match(unset.output, /AUTH_TOKEN is not set/);
  });

  test('protocol pings drop a socket that does not answer them, even while it sends frames', { timeout: 20_000 }, async () => {
    const relay = await startNodeRelay({ idleTimeoutMs: 1_500 });
    try {
      await register(relay, 'pings');
      const machine = await TestMachine.connect(relay.wsOrigin, 'pings', TEST_AUTH_TOKEN);
      // A peer whose connection died in a way TCP does not notice: it never answers protocol pings.
      const deaf = new WebSocket(`${relay.wsOrigin}/ws?machine_id=pings`, { autoPong: false } as WebSocket.ClientOptions);
      await once(deaf, 'open');
      const cid = await machine.nextOpen();
      const beat = setInterval(() => deaf.send('ping'), 100);
      try {
        const [code] = (await once(deaf, 'close')) as [number];
        assert.equal(code, 1006);
        await machine.nextClose(cid);
      } finally {
        clearInterval(beat);
        await machine.close();
      }
    } finally {
      await relay.close();
    }
  });

  test('X-Forwarded-For is ignored unless --trust-proxy: a forged one does not escape the per-address limit; behind a trusted proxy its last entry counts', { timeout: 30_000 }, async () => {
    /** How many of 12 unconfirmed clients, each claiming another X-Forwarded-For, get in. */
    const admittedOf = async (trustProxy: boolean) => {
      const relay = await startNodeRelay({ trustProxy });
      const clients: TestRelayClient[] = [];
      try {
        await register(relay, 'proxied');
        for (let i = 1; i <= 12; i += 1) {
          const forwarded = { 'x-forwarded-for': `203.0.113.${i}, 198.51.100.${i}` };
          const client = await TestRelayClient.connect(relay.wsOrigin, 'proxied', undefined, forwarded).catch((error: unknown) => {
            if (error instanceof UpgradeRefused && error.status === 429) return undefined;
            throw error;
          });
          if (client) clients.push(client);
        }
        return clients.length;
      } finally {
        await Promise.all(clients.map((client) => client.close()));
        await relay.close();
      }
    };
    assert.equal(await admittedOf(false), 8, 'all from 127.0.0.1: the per-address limit holds');
    assert.equal(await admittedOf(true), 12, 'each from its own address, as the proxy said');
  });

  test('SIGTERM closes every socket 1001 and exits 0', { timeout: 20_000 }, async () => {
    const relay = await startNodeRelay();
    await register(relay, 'sigterm-machine');
    const machine = await TestMachine.connect(relay.wsOrigin, 'sigterm-machine', TEST_AUTH_TOKEN);
    const client = await TestRelayClient.connect(relay.wsOrigin, 'sigterm-machine');
    await machine.nextOpen();
    await relay.close();
    assert.equal((await machine.peer.waitClose()).code, 1001);
    assert.equal((await client.peer.waitClose()).code, 1001);
    assert.match(relay.output(), /relay\.stopping/);
  });
});
