import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { relaySuite } from '../helpers/relay-suite';
import { TestMachine, TestRelayClient } from '../helpers/relay-peers';
import { TEST_AUTH_TOKEN, register, startWorkerRelay } from '../helpers/relay-targets';
import { waitFor } from '../helpers/temp';

relaySuite('worker', startWorkerRelay);

describe('relay (worker) specifics', () => {
  test('without an AUTH_TOKEN of at least 32 characters every request is 500 server_error, never echoing it', { timeout: 20_000 }, async () => {
    const short = 'short-token-0123456789';
    const relay = await startWorkerRelay({ authToken: short });
    try {
      assert.equal((await register(relay, 'm1', short)).status, 500);
      const answer = await fetch(`${relay.origin}/health`);
      assert.equal(answer.status, 500);
      const body = await answer.text();
      assert.equal(JSON.parse(body).code, 'server_error');
      assert.ok(!body.includes(short));
    } finally {
      await relay.close();
    }
  });

  // Hibernation cannot be observed without waking the object, so this one waits a fixed time: workerd
  // evicts an idle Durable Object after about 10-15 s. Pings meanwhile are answered by the runtime.
  test('after the Durable Object hibernates, routing, heartbeats and close reports still work', { timeout: 60_000 }, async () => {
    const relay = await startWorkerRelay();
    try {
      await register(relay, 'sleepy');
      const machine = await TestMachine.connect(relay.wsOrigin, 'sleepy', TEST_AUTH_TOKEN);
      const client = await TestRelayClient.connect(relay.wsOrigin, 'sleepy');
      const leaving = await TestRelayClient.connect(relay.wsOrigin, 'sleepy');
      const cid = await machine.nextOpen();
      const leavingCid = await machine.nextOpen();
      assert.equal(await client.nextStatus(), 'online');
      const starts = () => relay.output().split('relay.object_started').length - 1;
      assert.equal(starts(), 1);

      for (let second = 0; second < 20; second += 1) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        client.send('ping');
        await client.peer.next((t) => t === 'pong');
      }
      client.send('after sleep');
      assert.deepEqual(await machine.nextData(cid), { t: 'data', c: cid, d: 'after sleep' });
      await waitFor(() => starts() >= 2, 'the object to start again');
      machine.sendData(cid, 'reply');
      assert.equal(await client.next(), 'reply');
      await leaving.close();
      await machine.nextClose(leavingCid);
      await machine.close();
      assert.equal(await client.nextStatus(), 'offline');
      await client.close();
    } finally {
      await relay.close();
    }
  });
});
