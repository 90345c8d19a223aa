// A sender's device name and the phone's machine name cut by code points: never half a pair (review22a: cut by UTF-16 units, inside a pair).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { noteText } from '../../src/agent/prompt/environment';
import { machineName } from '../../src/web/pairing';

test("the turn's note is well-formed when the sender's device name is cut inside a surrogate pair", () => {
  const client = `phone (relay), device “${'\u{1F4F1}'.repeat(80)}”`;
  const text = noteText({ time: 't', roots: [], git: [], client, remote: true });
  assert.ok(text.isWellFormed(), JSON.stringify(text.slice(-140)));
  // 80 characters, then the ellipsis: 23 of the label's start and 57 phones.
  assert.ok(text.includes(`device “${'\u{1F4F1}'.repeat(57)}…`), JSON.stringify(text.slice(-140)));
});

test("an ASCII sender's label cuts as it did before code points counted: its first 80 characters and an ellipsis", () => {
  const text = noteText({ time: 't', roots: [], git: [], client: 'x'.repeat(100), remote: false });
  assert.ok(text.includes(`${'x'.repeat(80)}…`), JSON.stringify(text.slice(-120)));
  assert.ok(!text.includes('x'.repeat(81)));
});

test("the phone page's machine name (displayName, then cut at 60) is well-formed", () => {
  assert.equal(machineName(`${'a'.repeat(59)}\u{1F4BB}\u{1F4BB}`), `${'a'.repeat(59)}\u{1F4BB}`);
});
