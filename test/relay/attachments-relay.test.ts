// A 5 MB file crosses the real Node relay (issue 14): uploaded by a relayed client inside the end-to-end
// tunnel in chunks, every frame on the relay under 1 MiB, stored byte for byte, read back the same way.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { generateKeyPair } from '../../src/tunnel';
import { downloadAttachment, sha256, uploadAttachment } from '../helpers/attachments';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, startService, type RunningService } from '../helpers/service';
import { waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';
import { RELAY_TOKEN, RelayClient, startRelay, type RunningRelay } from '../helpers/relay-link-harness';

const MIB = 1024 * 1024;
let fake: FakeOpenAI;
let relay: RunningRelay;
let svc: RunningService;
let phone: RelayClient;

before(async () => {
  fake = await startFakeOpenAI();
  relay = await startRelay();
  svc = await startService(
    { base_url: fake.url, model: 'gpt-4o-mini', channels: [{ name: 'relay', type: 'websocket', url: relay.wsUrl, auth_token: RELAY_TOKEN }] },
    { relay: { baseDelayMs: 50, maxDelayMs: 300 } },
  );
  await waitFor(() => svc.service.relay.status().find((s) => s.state === 'online'), 'the relay link online', 10_000);
  const keyPair = generateKeyPair();
  const registered = await postJson(`${svc.httpUrl}/ws/register`, { machine_name: 'phone-attach', public_key: keyPair.publicKey }, { authorization: `Bearer ${svc.token}` });
  const { relay_url } = registered.body!.data as { relay_url: string };
  const lan = await TestClient.authed(svc.wsUrl, svc.token);
  const { machine_key } = (await lan.request({ type: 'create_pairing' })).data as { machine_key: string };
  lan.close();
  phone = await RelayClient.authed(relay_url, keyPair, machine_key, svc.token);
});

after(async () => {
  phone?.socket.close();
  await svc?.dispose();
  await relay?.close();
  await fake?.close();
});

test('a 5 MB file goes through the relay in chunks (every frame under 1 MiB) and is stored and read back byte for byte', { timeout: 120_000 }, async (t) => {
  const bytes = randomBytes(5 * 1000 * 1000);
  const before = phone.raw.length;
  const request = (frame: Record<string, unknown>) => phone.request(frame, 30_000);
  const ended = await uploadAttachment(request, bytes, 'big.bin', 'application/octet-stream');
  assert.equal(ended.status, 'ok', JSON.stringify(ended));
  const info = ended.data as { attachment_id: string; kind: string; size: number };
  assert.deepEqual({ kind: info.kind, size: info.size }, { kind: 'file', size: bytes.length });

  const sent = phone.raw.slice(before);
  const largest = Math.max(...sent.map((text) => Buffer.byteLength(text)));
  assert.ok(sent.length >= 2 * 14, `the upload took ${sent.length} frames (chunks and answers)`);
  assert.ok(largest < MIB, `largest frame on the relay: ${largest} bytes`);
  t.diagnostic(`upload: ${sent.length} frames through the relay, the largest ${largest} bytes`);
  assert.ok((await svc.service.store.blobs.get(sha256(bytes)))?.equals(bytes), 'stored byte for byte');

  const readBack = await downloadAttachment(request, info.attachment_id);
  assert.ok(readBack.equals(bytes), 'read back byte for byte');
  assert.ok(Math.max(...phone.raw.slice(before).map((text) => Buffer.byteLength(text))) < MIB, 'downloads stay under 1 MiB a frame too');
});
