/** The end-to-end tunnel (src/tunnel): handshake, boxes, and strict failure on tamper, replay, reorder, drop and wrong keys. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
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
  type SecureChannel,
} from '../../src/tunnel';

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
  const hs = new ClientHandshake(generateKeyPair(), machine.publicKey);
  assert.throws(() => hs.complete('{"relay":"status","machine":"online"}'), isE2E('malformed'));
  assert.throws(() => hs.complete(JSON.stringify({ e2e: 'welcome', v: 9, nonce: toBase64url(new Uint8Array(16)) })), isE2E('version'));
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
});
