/**
 * The phone's pairing from the URL fragment (src/web/pairing.ts): LAN and relay forms, and what is
 * refused; the machines it keeps (src/web/machines/machine-store.ts): one pairing per machine, the
 * single pairing of earlier builds migrated, each machine's own storage.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateKeyPair } from '../../src/tunnel';
import { MachineStore } from '../../src/web/machines/machine-store';
import { nameOfFragment, parseFragment, readPairingLink, unreachableFrom } from '../../src/web/pairing';

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

test('a second machine is added beside the first; pairing the same machine again renews it; a device token replaces the spent secret', () => {
  const storage = new MemoryStorage();
  const machines = new MachineStore(storage);
  const a = machines.add(parseFragment(relayFragment({ relay: 'wss://r/ws?machine_id=a', machine_key: machineKey, pair: 'once' }))!, 'desk');
  const otherKey = generateKeyPair().publicKey;
  const b = machines.add(parseFragment(relayFragment({ relay: 'wss://r/ws?machine_id=b', machine_key: otherKey, pair: 'twice', name: 'desk' }))!, 'desk');
  assert.deepEqual(
    new MachineStore(storage).all.map((m) => m.name),
    ['desk', 'desk (2)'],
    'both kept, names told apart',
  );
  assert.equal(new MachineStore(storage).current?.id, b.id, 'the machine just paired is shown');
  machines.updatePairing(a.id, ({ pair: _spent, ...rest }) => ({ ...rest, token: 'device-token', device: 'phone-1' }));
  assert.deepEqual(new MachineStore(storage).find(a.id)?.pairing, { url: 'wss://r/ws?machine_id=a', token: 'device-token', device: 'phone-1', relay: { machineKey, pair: 'once' } });
  machines.add(parseFragment(relayFragment({ relay: 'wss://r/ws?machine_id=a', machine_key: machineKey, pair: 'again' }))!);
  const again = new MachineStore(storage);
  assert.equal(again.all.length, 2, 're-pairing does not add a machine');
  assert.equal(again.find(a.id)?.pairing.pair, 'again');
  assert.equal(again.find(a.id)?.name, 'desk', 'and keeps its name');
  assert.equal(again.find(a.id)?.slot, a.slot, 'and its slot (its push worker)');
  assert.notEqual(a.slot, b.slot);
  assert.equal(nameOfFragment(relayFragment({ relay: 'x', name: ' laptop ' })), 'laptop');
});

test('the single pairing of an earlier build becomes the first machine, with its conversation and outbox', () => {
  const storage = new MemoryStorage();
  storage.setItem('remote-assistant.pairing', JSON.stringify({ url: 'ws://192.168.1.5:5000/ws', token: 'device-token' }));
  storage.setItem('remote-assistant.conversation', 'conv-1');
  storage.setItem('remote-assistant.outbox', '[{"client_message_id":"m1","text":"hi"}]');
  const machines = new MachineStore(storage);
  assert.deepEqual(
    machines.all.map((m) => [m.name, m.pairing.token]),
    [['192.168.1.5:5000', 'device-token']],
  );
  const own = machines.storageOf(machines.all[0].id);
  assert.equal(own.getItem('remote-assistant.conversation'), 'conv-1');
  assert.equal(own.getItem('remote-assistant.outbox'), '[{"client_message_id":"m1","text":"hi"}]');
  assert.equal(storage.getItem('remote-assistant.pairing'), null);
  assert.equal(storage.getItem('remote-assistant.outbox'), null, 'no outbox left outside the machine');
});

test("each machine's storage is its own, and removing a machine forgets all of it", () => {
  const storage = new MemoryStorage();
  const machines = new MachineStore(storage);
  const a = machines.add({ url: 'ws://a/ws', token: 'ta' });
  const b = machines.add({ url: 'ws://b/ws', token: 'tb' });
  machines.storageOf(a.id).setItem('remote-assistant.conversation', 'on-a');
  machines.storageOf(b.id).setItem('remote-assistant.conversation', 'on-b');
  assert.equal(machines.storageOf(a.id).getItem('remote-assistant.conversation'), 'on-a');
  machines.remove(b.id);
  assert.equal(machines.storageOf(b.id).getItem('remote-assistant.conversation'), null);
  assert.equal(machines.storageOf(a.id).getItem('remote-assistant.conversation'), 'on-a');
  assert.equal(new MachineStore(storage).current?.id, a.id);
  assert.ok(!JSON.stringify([...Array(storage.length).keys()].map((i) => storage.getItem(storage.key(i)!))).includes('tb'), "b's credential is gone");
});

test("a pasted pairing link: its own socket (not the page's), its name; anything else is said to be no pairing link", () => {
  assert.deepEqual(readPairingLink('  http://192.168.1.7:5000/#pair=s2&name=desk  '), { pairing: { url: 'ws://192.168.1.7:5000/ws', token: '', pair: 's2' }, name: 'desk' });
  const relay = readPairingLink(`https://relay.example/${relayFragment({ relay: 'wss://relay.example/ws?machine_id=m', machine_key: machineKey, pair: 'p' })}`);
  assert.ok('pairing' in relay && relay.pairing.relay?.machineKey === machineKey);
  for (const text of ['my computer', 'http://192.168.1.7:5000/', 'ftp://h/#pair=x', 'http://h/#url=http%3A%2F%2Fh%2Fws&pair=x', ''])
    assert.match((readPairingLink(text) as { problem: string }).problem, /not a pairing link/, text);
});

test('an https page cannot reach a ws:// machine on the LAN (mixed content), and says so; wss, loopback and http pages can', () => {
  const lan = { url: 'ws://192.168.1.7:5000/ws', token: '' };
  assert.match(unreachableFrom(lan, { protocol: 'https:' }) ?? '', /opened over https.*192\.168\.1\.7.*relay/);
  assert.equal(unreachableFrom(lan, { protocol: 'http:' }), undefined);
  assert.equal(unreachableFrom({ url: 'ws://127.0.0.1:5000/ws', token: '' }, { protocol: 'https:' }), undefined);
  assert.equal(unreachableFrom({ url: 'wss://relay.example/ws?machine_id=m', token: '' }, { protocol: 'https:' }), undefined);
});
