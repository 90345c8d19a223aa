// The phone page's bundle targets Chrome 110 and Safari 16.0 (esbuild.mjs), which lack
// String.prototype.isWellFormed / toWellFormed: names are cleaned without them (review22a: the page threw at
// start, machine-store.ts load -> machineName -> displayName), and the loop used then agrees with them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { machineName } from '../../src/web/pairing';
import { readsAs } from '../../src/protocol/display-name';
import { wellFormed, wellFormedLoop } from '../../src/protocol/code-points';

/** Runs `body` with String.prototype's isWellFormed and toWellFormed removed, as in Safari 16.0-16.3. */
function withoutBuiltIns(body: () => void): void {
  const proto = String.prototype as unknown as Record<string, unknown>;
  const saved = { is: proto.isWellFormed, to: proto.toWellFormed };
  delete proto.isWellFormed;
  delete proto.toWellFormed;
  try {
    body();
  } finally {
    proto.isWellFormed = saved.is;
    proto.toWellFormed = saved.to;
  }
}

test('names are cleaned in a browser without String.prototype.isWellFormed (Safari 16.0-16.3, Chrome 110)', () => {
  withoutBuiltIns(() => {
    assert.equal(machineName('Laptop'), 'Laptop');
    assert.equal(readsAs('Laptop'), 'Laptop');
    assert.equal(machineName('lap\ud800top \ud83d\udcbb'), 'lap\ufffdtop \ud83d\udcbb');
    assert.equal(wellFormed('\udc00\ud800'), '\ufffd\ufffd');
  });
});

/** A deterministic generator (mulberry32), so a failure names a string that can be made again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The pieces a string is made of: plain units, lone highs and lows (the range's edges too), whole pairs and
// pairs reversed (a low, then a high: two lone surrogates).
const PIECES = ['a', 'é', '\uffff', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\ude00', '\udbff\udfff', '\ude00\ud83d', '\ud800\ud800', '\udc00\udc00'];

test('the loop used without the built-ins gives what toWellFormed gives, and the same string when well-formed', () => {
  const next = random(22);
  for (let n = 0; n < 20_000; n++) {
    let text = '';
    const length = Math.floor(next() * 12);
    for (let i = 0; i < length; i++) text += PIECES[Math.floor(next() * PIECES.length)];
    const expected = text.toWellFormed();
    assert.equal(wellFormedLoop(text), expected, JSON.stringify(text));
    if (text.isWellFormed()) assert.equal(wellFormedLoop(text), text);
  }
  for (const edge of ['', '\ud800', '\udc00', '\ud800x', 'x\ud800', '\udc00x', 'x\udc00', '\ud83d\ude00', 'x\ud83d', '\ude00x']) {
    assert.equal(wellFormedLoop(edge), edge.toWellFormed(), JSON.stringify(edge));
  }
});
