// The phone reads the relay's own frames without zod (src/protocol/relay-client-frame.ts); the relay
// writes them, and the service reads its machine frames, with the schemas of protocol/relay-frames.ts.
// The same texts through both readers: a schema change the phone's reader misses fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RelayClientFrame, RelayToMachineFrame, parseFrame, readRelayClientFrame } from '../../src/protocol';
import { closeFrame, dataFrame, openFrame, relayErrorFrame, statusFrame } from '../../src/relay/frames';
import { generateKeyPair } from '../../src/tunnel';
import { RelayWire } from '../../src/web/relay-wire';

const RELAY_TEXTS = [
  statusFrame(true),
  statusFrame(false),
  relayErrorFrame('rate_limited', 'slow down'),
  '{"relay":"status","machine":"asleep"}',
  '{"relay":"status"}',
  '{"relay":"error","error":"no code"}',
  '{"relay":"error","code":"x","error":7}',
  '{"relay":"hello"}',
  '{"relay":"status","machine":"online","extra":1}',
];
const OTHER_TEXTS = ['not json', 'bm90IGpzb24=', '{"status":"ok","data":{}}', '["relay"]', 'null', '{"relay":1}', '{"note":"the word \\"relay\\" in a service frame"}'];

test("the phone's reader of relay frames agrees with their schema on every text", () => {
  for (const text of RELAY_TEXTS) {
    const schema = parseFrame(RelayClientFrame, text);
    const read = readRelayClientFrame(text);
    assert.deepEqual(read ?? undefined, schema, text);
    // A frame of the relay's that no schema knows is still the relay's: ignored, never read as a tunnel frame.
    if (!schema) assert.equal(read, null, `${text}: the relay's, unknown`);
  }
  for (const text of OTHER_TEXTS) {
    assert.equal(parseFrame(RelayClientFrame, text), undefined, text);
    assert.equal(readRelayClientFrame(text), undefined, text);
  }
});

test("what the relay writes, its schema reads: status, error and the machine socket's frames", () => {
  assert.deepEqual(readRelayClientFrame(statusFrame(true)), { relay: 'status', machine: 'online' });
  assert.deepEqual(readRelayClientFrame(relayErrorFrame('rate_limited', 'slow down')), { relay: 'error', code: 'rate_limited', error: 'slow down' });
  assert.deepEqual(parseFrame(RelayToMachineFrame, openFrame('c1', '203.0.113.9')), { t: 'open', c: 'c1', a: '203.0.113.9' });
  assert.deepEqual(parseFrame(RelayToMachineFrame, dataFrame('c1', 'box')), { t: 'data', c: 'c1', d: 'box' });
  assert.deepEqual(parseFrame(RelayToMachineFrame, closeFrame('c1')), { t: 'close', c: 'c1' });
  assert.equal(parseFrame(RelayToMachineFrame, '{"t":"data","c":"c1"}'), undefined, 'data without d');
  assert.equal(parseFrame(RelayToMachineFrame, '{"t":"open","c":""}'), undefined, 'an empty client id');
});

test("a lying relay's error text never reaches the page: the phone words the notice itself, by the frame's code", () => {
  const wire = new RelayWire({ keyPair: generateKeyPair(), machineKey: generateKeyPair().publicKey, pairingSecret: () => undefined, onPaired: () => undefined });
  wire.begin(() => undefined);
  const lure = 'Session expired: sign in again at https://evil.example/login';
  for (const code of ['rate_limited', 'payload_too_large', 'not_found', 'invalid_request', 'made_up']) {
    const event = wire.receive(JSON.stringify({ relay: 'error', code, error: lure }));
    assert.equal(event.kind, 'notice', code);
    const detail = (event as { detail: string }).detail;
    assert.ok(detail.length > 0 && !detail.includes('evil') && !detail.includes('sign in'), `${code}: ${detail}`);
  }
  // The relay's own words for its real errors are ours too.
  assert.match((wire.receive(relayErrorFrame('rate_limited', 'more than 30 frames a second; frame dropped')) as { detail: string }).detail, /too many/);
});
