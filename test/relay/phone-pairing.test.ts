/** The phone's pairing from the URL fragment (src/web/pairing.ts): LAN and relay forms, and what is refused. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateKeyPair } from '../../src/tunnel';
import { loadPairing, markPaired, parseFragment, saveDeviceToken } from '../../src/web/pairing';

class MemoryStorage implements Storage {
  private readonly items = new Map<string, string>();
  get length() {
    return this.items.size;
  }
  clear() {
    this.items.clear();
  }
  getItem(key: string) {
    return this.items.get(key) ?? null;
  }
  key(index: number) {
    return [...this.items.keys()][index] ?? null;
  }
  removeItem(key: string) {
    this.items.delete(key);
  }
  setItem(key: string, value: string) {
    this.items.set(key, value);
  }
}

const machineKey = generateKeyPair().publicKey;
const relayFragment = (fields: Record<string, string>) => `#${new URLSearchParams(fields).toString()}`;

test('the relay form: relay socket, machine key, one-time secret, no token', () => {
  const pairing = parseFragment(relayFragment({ relay: 'wss://relay.example/ws?machine_id=abc', machine_key: machineKey, pair: 'secret-1' }));
  assert.deepEqual(pairing, { url: 'wss://relay.example/ws?machine_id=abc', token: '', pair: 'secret-1', relay: { machineKey, pair: 'secret-1' } });
});

test('relay forms with a bad machine key, a non-WebSocket relay or neither secret nor token are refused', () => {
  assert.equal(parseFragment(relayFragment({ relay: 'wss://r/ws', machine_key: 'short', pair: 's' })), undefined);
  assert.equal(parseFragment(relayFragment({ relay: 'https://r/ws', machine_key: machineKey, pair: 's' })), undefined);
  assert.equal(parseFragment(relayFragment({ relay: 'wss://r/ws', machine_key: machineKey })), undefined);
});

test('the LAN forms: a pairing secret, or a token given by hand, defaulting to the page host', () => {
  assert.deepEqual(parseFragment('#pair=s1', { protocol: 'http:', host: '192.168.1.5:5000' }), { url: 'ws://192.168.1.5:5000/ws', token: '', pair: 's1' });
  assert.deepEqual(parseFragment('#token=abc', { protocol: 'http:', host: '192.168.1.5:5000' }), { url: 'ws://192.168.1.5:5000/ws', token: 'abc' });
});

test('a relay pairing is remembered, the fragment cleared, and the spent secret dropped', () => {
  const storage = new MemoryStorage();
  const replaced: string[] = [];
  const location = { hash: relayFragment({ relay: 'wss://r/ws?machine_id=m', machine_key: machineKey, pair: 'once' }), pathname: '/', search: '', protocol: 'https:', host: 'r' } as Location;
  const history = { state: null, replaceState: (_s: unknown, _t: string, url: string) => replaced.push(url) } as unknown as History;
  const pairing = loadPairing(location, storage, history);
  assert.equal(pairing?.relay?.pair, 'once');
  assert.deepEqual(replaced, ['/']);
  markPaired(storage);
  assert.deepEqual(loadPairing({ ...location, hash: '' } as Location, storage, history), { url: 'wss://r/ws?machine_id=m', token: '', pair: 'once', relay: { machineKey } }, 'auth still spends it');
  saveDeviceToken('device-token', storage);
  const stored = loadPairing({ ...location, hash: '' } as Location, storage, history);
  assert.deepEqual(stored, { url: 'wss://r/ws?machine_id=m', token: 'device-token', relay: { machineKey } });
  assert.ok(!JSON.stringify([...Array(storage.length).keys()].map((i) => storage.getItem(storage.key(i)!))).includes('once'));
});
