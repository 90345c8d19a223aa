// The phone's end of the tunnel (src/web/relay-wire.ts) against a lying relay: what it does before the
// machine has proved itself (its first box that opens).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomBytes } from '@noble/hashes/utils.js';
import { statusFrame } from '../../src/relay/frames';
import { acceptHello, generateKeyPair, parseHello, toBase64url } from '../../src/tunnel';
import { RelayWire } from '../../src/web/relay-wire';

test("a lying relay's welcome does not make the phone forget its pairing secret: it is spent on the machine's first box", () => {
  const machine = generateKeyPair();
  let secret: string | undefined = 'one-time-secret';
  let paired = 0;
  const sent: string[] = [];
  const wire = new RelayWire({
    keyPair: generateKeyPair(),
    machineKey: machine.publicKey,
    pairingSecret: () => secret,
    onPaired: () => {
      paired += 1;
      secret = undefined; // what the page does (machine-connection.ts)
    },
  });
  wire.begin((text) => sent.push(text));
  assert.equal(wire.receive(statusFrame(true)).kind, 'restart');
  // The relay answers the hello itself, with a welcome of its own making, then a box of its own.
  const fake = JSON.stringify({ e2e: 'welcome', v: 2, nonce: toBase64url(randomBytes(16)), eph: generateKeyPair().publicKey });
  assert.equal(wire.receive(fake).kind, 'ready');
  assert.equal(paired, 0, 'a welcome proves nothing: anyone can write one');
  assert.equal(wire.receive(JSON.stringify({ e2e: 'box', c: toBase64url(randomBytes(40)) })).kind, 'broken');
  assert.equal(paired, 0);

  // The genuine machine next time: the hello still proves the secret, which is spent on its first box.
  wire.receive(statusFrame(true));
  const hello = parseHello(sent.at(-1)!);
  assert.ok(hello.pair, 'the next hello still carries the pairing proof (no QR rescan needed)');
  const { welcome, channel } = acceptHello(machine, hello);
  assert.equal(wire.receive(welcome).kind, 'ready');
  assert.equal(paired, 0);
  assert.deepEqual(wire.receive(channel.seal('{"status":"ok"}')), { kind: 'frame', text: '{"status":"ok"}' });
  assert.equal(paired, 1);
  wire.receive(channel.seal('{"type":"event"}'));
  assert.equal(paired, 1, 'once');
});
