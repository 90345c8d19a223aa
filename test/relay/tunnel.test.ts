/** The end-to-end tunnel (src/tunnel): handshake, boxes, and strict failure on tamper, replay, reorder, drop and wrong keys. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { x25519 } from '@noble/curves/ed25519.js';
import { concatBytes, randomBytes } from '@noble/hashes/utils.js';
import {
  SecureChannel,
  ClientHandshake,
  E2EError,
  acceptHello,
  canonicalPublicKey,
  counterNonce,
  fromBase64url,
  generateKeyPair,
  parseHello,
  parseKeyPair,
  proofMatches,
  toBase64url,
} from '../../src/tunnel';
import { candidateKeys, readRecordedSession } from '../helpers/recorded-tunnel';

function connect(options: { pairingSecret?: string; machineKeyForClient?: string } = {}) {
  const machine = generateKeyPair();
  const client = generateKeyPair();
  const handshake = new ClientHandshake(client, options.machineKeyForClient ?? machine.publicKey, options.pairingSecret);
  const hello = parseHello(handshake.hello());
  const { welcome, channel: machineSide } = acceptHello(machine, hello);
  const clientSide = handshake.complete(welcome);
  return { machine, client, hello, clientSide, machineSide };
}

const isE2E = (reason: string) => (error: unknown) => error instanceof E2EError && error.reason === reason;

function flipByte(frame: string, index = 5): string {
  const parsed = JSON.parse(frame) as { c: string };
  const bytes = fromBase64url(parsed.c)!;
  bytes[index] ^= 0x01;
  return JSON.stringify({ e2e: 'box', c: toBase64url(bytes) });
}

test('base64url round-trips every length and refuses other alphabets and non-canonical spellings', () => {
  for (let n = 0; n < 40; n++) {
    const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff);
    const text = toBase64url(bytes);
    assert.equal(text, Buffer.from(bytes).toString('base64url'));
    assert.deepEqual(fromBase64url(text), bytes);
  }
  assert.equal(fromBase64url('ab+/'), undefined);
  assert.equal(fromBase64url('QR'), undefined, 'leftover bits set: not canonical (canonical is QQ)');
  assert.deepEqual(fromBase64url('QQ'), Uint8Array.of(0x41));
});

test('the nonce is 24 bytes whose last 8 are the big-endian frame count', () => {
  assert.equal(toBase64url(counterNonce(0)), toBase64url(new Uint8Array(24)));
  const n = counterNonce(2 ** 32 + 258);
  assert.deepEqual([...n.slice(16)], [0, 0, 0, 1, 0, 0, 1, 2]);
});

test('a handshake gives both sides the same keys: frames go both ways, in order, any text', () => {
  const { clientSide, machineSide } = connect();
  const texts = ['{"type":"auth","token":"t"}', 'héllo wörld ✓ 🚀', '', 'x'.repeat(1024 * 1024)];
  for (const text of texts) assert.equal(machineSide.open(clientSide.seal(text)), text);
  for (const text of texts) assert.equal(clientSide.open(machineSide.seal(text)), text);
  const sealed = clientSide.seal('secret chat text');
  assert.ok(!sealed.includes('secret chat text'), 'the box holds no plaintext');
  assert.deepEqual(Object.keys(JSON.parse(sealed)), ['e2e', 'c']);
});

test('the same plaintext sealed twice gives different boxes (the counter moves the nonce)', () => {
  const { clientSide } = connect();
  assert.notEqual(clientSide.seal('same'), clientSide.seal('same'));
});

test('a tampered frame fails, and the channel then refuses everything', () => {
  const { clientSide, machineSide } = connect();
  const good = clientSide.seal('one');
  assert.throws(() => machineSide.open(flipByte(good)), isE2E('decrypt'));
  assert.ok(machineSide.isBroken);
  assert.throws(() => machineSide.open(good), isE2E('closed'), 'not even the genuine frame opens afterwards');
  assert.throws(() => machineSide.seal('reply'), isE2E('closed'));
});

test('a tampered tag (last byte) fails too', () => {
  const { clientSide, machineSide } = connect();
  const frame = clientSide.seal('hello');
  const bytes = fromBase64url((JSON.parse(frame) as { c: string }).c)!;
  assert.throws(() => machineSide.open(flipByte(frame, bytes.length - 1)), isE2E('decrypt'));
});

test('a replayed frame fails', () => {
  const { clientSide, machineSide } = connect();
  const first = clientSide.seal('pay 10');
  assert.equal(machineSide.open(first), 'pay 10');
  assert.throws(() => machineSide.open(first), isE2E('decrypt'));
});

test('reordered frames fail', () => {
  const { clientSide, machineSide } = connect();
  clientSide.seal('first');
  const second = clientSide.seal('second');
  assert.throws(() => machineSide.open(second), isE2E('decrypt'));
});

test('a dropped frame makes the next one fail', () => {
  const { clientSide, machineSide } = connect();
  assert.equal(machineSide.open(clientSide.seal('a')), 'a');
  clientSide.seal('b (lost)');
  assert.throws(() => machineSide.open(clientSide.seal('c')), isE2E('decrypt'));
});

test('a frame of one direction does not open in the other (separate keys)', () => {
  const { clientSide, machineSide } = connect();
  const fromClient = clientSide.seal('reflect me');
  assert.throws(() => clientSide.open(fromClient), isE2E('decrypt'));
  assert.equal(machineSide.open(fromClient), 'reflect me', 'the machine side is unaffected');
});

test('a client that believes in the wrong machine key cannot read or write the tunnel', () => {
  const impostor = generateKeyPair();
  const { clientSide, machineSide } = connect({ machineKeyForClient: impostor.publicKey });
  assert.throws(() => machineSide.open(clientSide.seal('hi')), isE2E('decrypt'));
  assert.throws(() => clientSide.open(machineSide.seal('hi')), isE2E('closed'), 'the machine side broke on the first bad frame');
});

test('frames of one session never open in another session of the same keys (fresh nonces each handshake)', () => {
  const machine = generateKeyPair();
  const client = generateKeyPair();
  const session = () => {
    const hs = new ClientHandshake(client, machine.publicKey);
    const { welcome, channel } = acceptHello(machine, parseHello(hs.hello()));
    return { client: hs.complete(welcome), machine: channel as SecureChannel };
  };
  const a = session();
  const b = session();
  assert.throws(() => b.machine.open(a.client.seal('from session a')), isE2E('decrypt'));
});

test('non-box frames after the handshake are refused as malformed', () => {
  for (const frame of ['{"type":"auth","token":"x"}', 'not json', '{"e2e":"box","c":"***"}', 'null']) {
    const { machineSide } = connect();
    assert.throws(() => machineSide.open(frame), isE2E('malformed'), frame);
  }
});

test('hello: fields are checked; a pairing proof matches only its secret and key', () => {
  const bad = [
    'nope',
    '{"e2e":"welcome","v":1}',
    JSON.stringify({ e2e: 'hello', v: 2, client_key: toBase64url(new Uint8Array(32)), nonce: toBase64url(new Uint8Array(16)) }),
    JSON.stringify({ e2e: 'hello', v: 1, client_key: 'short', nonce: toBase64url(new Uint8Array(16)) }),
    JSON.stringify({ e2e: 'hello', v: 1, client_key: toBase64url(new Uint8Array(32)), nonce: 'x' }),
    JSON.stringify({ e2e: 'hello', v: 1, client_key: toBase64url(new Uint8Array(32)), nonce: toBase64url(new Uint8Array(16)), pair: 'abc' }),
  ];
  for (const text of bad)
    assert.throws(
      () => parseHello(text),
      (e: unknown) => e instanceof E2EError && e.message.length > 0,
      text,
    );

  const { hello, client } = connect({ pairingSecret: 'the-one-time-secret' });
  assert.equal(hello.clientKey, client.publicKey);
  assert.ok(hello.pair);
  assert.ok(proofMatches('the-one-time-secret', hello.clientKeyBytes, hello.pair!));
  assert.ok(!proofMatches('another-secret', hello.clientKeyBytes, hello.pair!));
  assert.ok(!proofMatches('the-one-time-secret', fromBase64url(generateKeyPair().publicKey)!, hello.pair!));
  assert.equal(connect().hello.pair, undefined, 'no proof without a pairing secret');
});

test('a low-order (all-zero) client key is refused at the handshake', () => {
  const machine = generateKeyPair();
  const hello = parseHello(JSON.stringify({ e2e: 'hello', v: 1, client_key: toBase64url(new Uint8Array(32)), nonce: toBase64url(new Uint8Array(16)) }));
  assert.throws(() => acceptHello(machine, hello), isE2E('key'));
});

test('the welcome is checked by the client', () => {
  const machine = generateKeyPair();
  const started = () => {
    const hs = new ClientHandshake(generateKeyPair(), machine.publicKey);
    hs.hello();
    return hs;
  };
  assert.throws(() => started().complete('{"relay":"status","machine":"online"}'), isE2E('malformed'));
  assert.throws(() => started().complete(JSON.stringify({ e2e: 'welcome', v: 9, nonce: toBase64url(new Uint8Array(16)) })), isE2E('version'));
  assert.throws(() => new ClientHandshake(generateKeyPair(), 'not-a-key'), isE2E('key'));
});

test('stored key pairs are validated; public keys have one canonical spelling', () => {
  const pair = generateKeyPair();
  assert.deepEqual(parseKeyPair(JSON.parse(JSON.stringify(pair))), pair);
  assert.equal(parseKeyPair({ ...pair, publicKey: generateKeyPair().publicKey }), undefined, 'halves of different pairs');
  assert.equal(parseKeyPair({ publicKey: pair.publicKey }), undefined);
  const standard = Buffer.from(fromBase64url(pair.publicKey)!).toString('base64');
  assert.equal(canonicalPublicKey(standard), pair.publicKey, 'standard base64 with padding is accepted');
  assert.equal(canonicalPublicKey('too-short'), undefined);
  // X25519 ignores a public key's bit 255: the key with it set is a twin of the same key (RFC 7748).
  const twin = fromBase64url(pair.publicKey)!;
  twin[31] ^= 0x80;
  assert.equal(canonicalPublicKey(toBase64url(twin)), pair.publicKey, 'the twin with bit 255 set is the same key');
  assert.equal(parseHello(JSON.stringify({ e2e: 'hello', v: 1, client_key: toBase64url(twin), nonce: toBase64url(new Uint8Array(16)) })).clientKey, pair.publicKey);
});

test('v2: hello and welcome carry fresh ephemeral keys; the recorded frames do not open with both long-term secret keys', () => {
  const machine = generateKeyPair();
  const client = generateKeyPair();
  const hs = new ClientHandshake(client, machine.publicKey);
  const helloText = hs.hello();
  const { welcome, channel: machineSide } = acceptHello(machine, parseHello(helloText));
  const clientSide = hs.complete(welcome);
  const boxes = [clientSide.seal('{"type":"auth","token":"FS-TOKEN"}'), machineSide.seal('{"status":"ok"}')];
  assert.equal(machineSide.open(boxes[0]), '{"type":"auth","token":"FS-TOKEN"}');
  assert.equal(clientSide.open(boxes[1]), '{"status":"ok"}');
  const hello = JSON.parse(helloText) as { v: number; eph: string };
  const answer = JSON.parse(welcome) as { v: number; eph: string };
  assert.equal(hello.v, 2);
  assert.equal(answer.v, 2);
  assert.equal(fromBase64url(hello.eph)?.length, 32);
  assert.equal(fromBase64url(answer.eph)?.length, 32);
  assert.notEqual(JSON.parse(new ClientHandshake(client, machine.publicKey).hello()).eph, hello.eph, 'a new ephemeral key per handshake');
  assert.deepEqual(readRecordedSession([helloText, welcome, ...boxes], client, machine).opened, []);
});

test('v1 hellos of older pages are still answered (v1 welcome, no ephemeral key): such a session opens with the long-term keys', () => {
  const machine = generateKeyPair();
  const client = generateKeyPair();
  const helloText = JSON.stringify({ e2e: 'hello', v: 1, client_key: client.publicKey, nonce: toBase64url(new Uint8Array(16).fill(7)) });
  const hello = parseHello(helloText);
  assert.equal(hello.version, 1);
  const { welcome, channel } = acceptHello(machine, hello);
  const answer = JSON.parse(welcome) as Record<string, unknown>;
  assert.equal(answer.v, 1);
  assert.equal(answer.eph, undefined);
  // What an older page derives (the recording attacker does the same): the v1 session works, and is what v2 ends.
  assert.deepEqual(readRecordedSession([helloText, welcome, channel.seal('{"status":"ok"}')], client, machine).opened, ['{"status":"ok"}']);
});

test('a relay that strips the ephemeral key (a v1 hello) gets a v1 welcome the client refuses: no downgrade', () => {
  const machine = generateKeyPair();
  const client = generateKeyPair();
  const hs = new ClientHandshake(client, machine.publicKey);
  const { eph: _dropped, ...rest } = JSON.parse(hs.hello()) as Record<string, unknown>;
  const { welcome } = acceptHello(machine, parseHello(JSON.stringify({ ...rest, v: 1 })));
  assert.throws(() => hs.complete(welcome), isE2E('version'));
  // A welcome that says v2 without the machine's ephemeral key is refused too.
  const bare = JSON.stringify({ ...(JSON.parse(welcome) as object), v: 2 });
  const again = new ClientHandshake(client, machine.publicKey);
  again.hello();
  assert.throws(() => again.complete(bare), isE2E('malformed'));
});

test('a relay that puts its own ephemeral key in the hello or the welcome breaks the session at the first frame', () => {
  const machine = generateKeyPair();
  const client = generateKeyPair();
  const relay = generateKeyPair();
  for (const side of ['hello', 'welcome'] as const) {
    const hs = new ClientHandshake(client, machine.publicKey);
    const hello = JSON.parse(hs.hello()) as Record<string, unknown>;
    if (side === 'hello') hello.eph = relay.publicKey;
    const { welcome, channel: machineSide } = acceptHello(machine, parseHello(JSON.stringify(hello)));
    const answer = JSON.parse(welcome) as Record<string, unknown>;
    if (side === 'welcome') answer.eph = relay.publicKey;
    const clientSide = hs.complete(JSON.stringify(answer));
    assert.throws(() => machineSide.open(clientSide.seal('{"type":"auth","token":"t"}')), isE2E('decrypt'), side);
  }
});

test('v2: an ephemeral key that is missing or of low order is refused', () => {
  const machine = generateKeyPair();
  const base = { e2e: 'hello', v: 2, client_key: generateKeyPair().publicKey, nonce: toBase64url(new Uint8Array(16)) };
  assert.throws(() => parseHello(JSON.stringify(base)), isE2E('malformed'));
  assert.throws(() => parseHello(JSON.stringify({ ...base, eph: 'short' })), isE2E('malformed'));
  const zero = parseHello(JSON.stringify({ ...base, eph: toBase64url(new Uint8Array(32)) }));
  assert.throws(() => acceptHello(machine, zero), isE2E('key'));
  const hs = new ClientHandshake(generateKeyPair(), machine.publicKey);
  hs.hello();
  assert.throws(() => hs.complete(JSON.stringify({ e2e: 'welcome', v: 2, nonce: toBase64url(new Uint8Array(16)), eph: toBase64url(new Uint8Array(32)) })), isE2E('key'));
});

const dhOf = (secret: string, peer: string | Uint8Array) => x25519.getSharedSecret(fromBase64url(secret)!, typeof peer === 'string' ? fromBase64url(peer)! : peer);
const saltOf = (hello: string, welcome: string) => concatBytes(...[hello, welcome].map((text) => fromBase64url((JSON.parse(text) as { nonce: string }).nonce)!));

test("identity binding: a holder of the machine's secret key (and its own ephemeral one) cannot pose as a phone to the machine", () => {
  const machine = generateKeyPair();
  const phone = generateKeyPair();
  const mine = generateKeyPair(); // the attacker's ephemeral key pair
  // Every key the attacker can make, each tried on a fresh machine session (the first bad box breaks one).
  for (let i = 0; i < 7 * 3; i++) {
    const hello = JSON.stringify({ e2e: 'hello', v: 2, client_key: phone.publicKey, nonce: toBase64url(randomBytes(16)), eph: mine.publicKey });
    const { welcome, channel } = acceptHello(machine, parseHello(hello));
    const machineEph = (JSON.parse(welcome) as { eph: string }).eph;
    // ss and es (the machine's secret), ee (its own); se needs the phone's secret or the machine's ephemeral one.
    const computable = [dhOf(machine.secretKey, phone.publicKey), dhOf(mine.secretKey, machineEph), dhOf(machine.secretKey, mine.publicKey), undefined];
    const keys = candidateKeys(computable, saltOf(hello, welcome), hello, welcome)[i];
    const forged = new SecureChannel(keys.slice(0, 32), keys.slice(32, 64)).seal('{"type":"auth","token":"stolen"}');
    assert.throws(() => channel.open(forged), isE2E('decrypt'), `candidate ${i}`);
  }
});

test("identity binding: a holder of the phone's secret key (and its own ephemeral one) cannot pose as the machine to the phone", () => {
  const machine = generateKeyPair();
  const phone = generateKeyPair();
  const mine = generateKeyPair();
  for (let i = 0; i < 7 * 3; i++) {
    const hs = new ClientHandshake(phone, machine.publicKey);
    const hello = hs.hello();
    const welcome = JSON.stringify({ e2e: 'welcome', v: 2, nonce: toBase64url(randomBytes(16)), eph: mine.publicKey });
    const phoneEph = (JSON.parse(hello) as { eph: string }).eph;
    // ss and se (the phone's secret), ee (its own); es needs the machine's secret or the phone's ephemeral one.
    const computable = [dhOf(phone.secretKey, machine.publicKey), dhOf(mine.secretKey, phoneEph), undefined, dhOf(phone.secretKey, mine.publicKey)];
    const keys = candidateKeys(computable, saltOf(hello, welcome), hello, welcome)[i];
    const channel = hs.complete(welcome);
    const forged = new SecureChannel(keys.slice(32, 64), keys.slice(0, 32)).seal('{"status":"ok"}');
    assert.throws(() => channel.open(forged), isE2E('decrypt'), `candidate ${i}`);
  }
});

const flipTopBit = (key: string) => {
  const bytes = fromBase64url(key)!;
  bytes[31] ^= 0x80; // X25519 ignores this bit: the same Diffie-Hellman values
  return toBase64url(bytes);
};

test('transcript: a relay that alters any field of the hello or the welcome (even bits X25519 ignores) breaks the first box', () => {
  const machine = generateKeyPair();
  const client = generateKeyPair();
  type Edit = (frame: Record<string, unknown>) => Record<string, unknown>;
  const helloEdits: Record<string, Edit> = {
    'hello eph top bit': (f) => ({ ...f, eph: flipTopBit(f.eph as string) }),
    'hello client_key top bit': (f) => ({ ...f, client_key: flipTopBit(f.client_key as string) }),
    'hello pair added': (f) => ({ ...f, pair: toBase64url(new Uint8Array(32).fill(9)) }),
    'hello field added': (f) => ({ ...f, note: 'relay' }),
    'hello fields reordered': ({ e2e, ...rest }) => ({ ...rest, e2e }),
  };
  const welcomeEdits: Record<string, Edit> = {
    'welcome eph top bit': (f) => ({ ...f, eph: flipTopBit(f.eph as string) }),
    'welcome field added': (f) => ({ ...f, note: 'relay' }),
  };
  const cases: [string, Edit, Edit][] = [
    ...Object.entries(helloEdits).map(([name, edit]): [string, Edit, Edit] => [name, edit, (f) => f]),
    ...Object.entries(welcomeEdits).map(([name, edit]): [string, Edit, Edit] => [name, (f) => f, edit]),
    ['hello pair changed', (f) => ({ ...f, pair: toBase64url(new Uint8Array(32).fill(1)) }), (f) => f],
  ];
  for (const [name, editHello, editWelcome] of cases) {
    const hs = new ClientHandshake(client, machine.publicKey, name === 'hello pair changed' ? 'a-pairing-secret' : undefined);
    const hello = JSON.stringify(editHello(JSON.parse(hs.hello()) as Record<string, unknown>));
    const { welcome, channel: machineSide } = acceptHello(machine, parseHello(hello));
    const clientSide = hs.complete(JSON.stringify(editWelcome(JSON.parse(welcome) as Record<string, unknown>)));
    assert.throws(() => machineSide.open(clientSide.seal('{"type":"auth","token":"t"}')), isE2E('decrypt'), name);
  }
  // Untouched, the same session works.
  const hs = new ClientHandshake(client, machine.publicKey);
  const { welcome, channel } = acceptHello(machine, parseHello(hs.hello()));
  assert.equal(channel.open(hs.complete(welcome).seal('ok')), 'ok');
});

test('the client handshake completes once, after its hello; a refused welcome spends it too', () => {
  const machine = generateKeyPair();
  const client = generateKeyPair();
  const early = new ClientHandshake(client, machine.publicKey);
  assert.throws(() => early.complete('{}'), isE2E('closed'), 'no welcome before the hello');
  const hs = new ClientHandshake(client, machine.publicKey);
  const hello = parseHello(hs.hello());
  assert.throws(() => hs.complete('{"e2e":"welcome","v":1}'), isE2E('version'));
  assert.throws(() => hs.complete(acceptHello(machine, hello).welcome), isE2E('closed'), 'its ephemeral secret is gone');
});
