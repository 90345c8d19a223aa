/**
 * The service's relay link against both deployed relays, as built: `node dist/relay.js` (a child
 * process) and the Worker bundle in Miniflare (Durable Object, Hibernation API). For each: the link
 * comes online, a relayed client chats with streaming through the e2e tunnel, and after a relay restart
 * the link comes back by itself and a new session works.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { generateKeyPair } from '../../src/tunnel';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startNodeRelay, startWorkerRelay, NODE_RELAY, TEST_AUTH_TOKEN, WORKER_BUNDLE, type RelayTarget, type StartRelay } from '../helpers/relay-targets';
import { postJson, startService, type RunningService } from '../helpers/service';
import { waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';
import { RelayClient } from '../helpers/relay-link-harness';

const FAST = { baseDelayMs: 50, maxDelayMs: 300 };

for (const [name, start, bundle] of [
  ['node', startNodeRelay, NODE_RELAY],
  ['worker', startWorkerRelay, WORKER_BUNDLE],
] as [string, StartRelay, string][]) {
  describe(`relay link through the ${name} relay`, () => {
    let fake: FakeOpenAI;
    let relay: RelayTarget;
    let svc: RunningService;
    const keyPair = generateKeyPair();
    let relayUrl: string;
    let machineKey: string;
    const clients: { close(): void }[] = [];

    before(async () => {
      assert.ok(existsSync(bundle), `${bundle} is missing: run \`node esbuild.mjs\` first`);
      fake = await startFakeOpenAI();
      relay = await start();
      svc = await startService(
        { base_url: fake.url, model: 'fake-model', permission_mode: 'allow', channels: [{ name, type: 'websocket', url: `${relay.wsOrigin}/ws`, auth_token: TEST_AUTH_TOKEN }] },
        { relay: FAST },
      );
      const registered = await postJson(`${svc.httpUrl}/ws/register`, { machine_name: 'phone', public_key: keyPair.publicKey }, { authorization: `Bearer ${svc.token}` });
      relayUrl = (registered.body!.data as { relay_url: string }).relay_url;
      const lan = await TestClient.authed(svc.wsUrl, svc.token);
      machineKey = ((await lan.request({ type: 'create_pairing' })).data as { machine_key: string }).machine_key;
      lan.close();
    });

    after(async () => {
      for (const client of clients) client.close();
      await svc?.dispose();
      await relay?.close();
      await fake?.close();
    });

    const online = () => waitFor(() => svc.service.relay.status()[0]?.state === 'online', `${name} link online`, 20_000);

    async function chatThrough(text: string): Promise<void> {
      const client = await RelayClient.connect(relayUrl);
      clients.push(client);
      await client.next((f) => f.relay === 'status' && f.machine === 'online', 20_000);
      await client.handshake(keyPair, machineKey);
      assert.equal((await client.request({ type: 'auth', token: svc.token })).status, 'ok');
      fake.script({ text, chunks: 3 });
      const reply = await client.request({ type: 'chat', message: 'through the relay', stream: true });
      assert.equal((reply.data as { response: string }).response, text);
      assert.ok(await client.next((f) => f.event === 'chat.delta'), 'streamed');
      assert.ok(!client.raw.join('\n').includes(text), 'only ciphertext on the relay socket');
      client.close();
    }

    test('the link comes online and a relayed client chats', async () => {
      await online();
      await chatThrough(`hello via ${name}`);
    });

    test('after a relay restart the link comes back by itself', async () => {
      const before = svc.service.relay.status()[0].since;
      await relay.restart();
      // Online again, in a new connection (its state changed since).
      await waitFor(
        () => {
          const link = svc.service.relay.status()[0];
          return link.state === 'online' && link.since !== before;
        },
        `${name} link back online`,
        20_000,
      );
      await chatThrough(`again via ${name}`);
    });
  });
}
