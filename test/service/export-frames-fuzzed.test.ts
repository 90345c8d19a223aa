// exportPiece's chunked JSON and measuredFrame's in-place frame, fuzzed (written by review25a, s25, reviewing the pieces framed in place;
// seeded: the same texts every run). It failed with takeRoom keeping the room (a queued frame rewritten) and
// with the chunk loop splitting pairs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EXPORT_PIECE_CHARS, exportPiece } from '../../src/commands/conversation-export';
import { ok } from '../../src/protocol/envelope';
import { envelopeWire, jsonWithField, withDataText, type MeasuredText } from '../../src/protocol/wire-text';
import { measuredFrame, textFrame } from '../../src/transport/connections/ws-frames';

const ALPHABET = ['a', 'b c', '"', '\\', '\n', '\u0001', '\u001f', 'é', '漢', '😀', '\ud83d', '\ude00', '\u2028', '\ufeff'];
let seed = 25;
const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n);

function randomText(len: number, alphabet = ALPHABET): string {
  const out: string[] = [];
  let n = 0;
  while (n < len) {
    const s = alphabet[rnd(alphabet.length)];
    out.push(s);
    n += s.length;
  }
  return out.join('');
}

function check(text: string, offset: number, id: unknown): number {
  const { end, json } = exportPiece(text, offset);
  const slice = text.slice(offset, end);
  assert.ok(json.equals(Buffer.from(JSON.stringify(slice))), `json of the piece at ${offset}`);
  assert.ok(end - offset >= EXPORT_PIECE_CHARS || end === text.length, `short piece ${end - offset}`);
  if (end < text.length && end > offset) {
    const hi = text.charCodeAt(end - 1);
    const lo = text.charCodeAt(end);
    assert.ok(!(hi >= 0xd800 && hi <= 0xdbff && lo >= 0xdc00 && lo <= 0xdfff), `cut inside a pair at ${end}`);
  }
  const result = { conversation_id: 'c1', format: 'markdown', file_name: 'naïve 漢字 😀.md', text: slice, offset, next_offset: end < text.length ? end : null, total_chars: text.length, until: '12' };
  const copy = Buffer.from(json);
  const frame = measuredFrame(envelopeWire(ok(withDataText(result, jsonWithField(result, 'text', json)), id as never)) as MeasuredText);
  const expected = textFrame(JSON.stringify(ok(result, id as never)));
  assert.ok(frame.equals(expected), `frame of the piece at ${offset}`);
  assert.ok(frame.length < 1024 * 1024, `frame ${frame.length}`);
  assert.ok(json.equals(copy), 'the piece bytes are unchanged by framing');
  return end;
}

describe('review25a: exportPiece fuzz', () => {
  test('random texts of every troublesome character, whole downloads, ids short and long', () => {
    for (const len of [1, 7, 8191, 8192, 8193, 40_000, 300_000]) {
      const text = randomText(len);
      for (const id of [undefined, 3, 'x'.repeat(3000)]) {
        for (let offset = 0; offset < text.length;) offset = check(text, offset, id);
      }
    }
  });

  test('a pair astride every chunk end, from offsets inside pairs too', () => {
    for (const start of [0, 1, 2, 8191, 8192]) {
      const text = Array.from({ length: 40 * 8192 }, (_, i) => ((i + 1) % 8192 === 0 ? '\ud83d' : i % 8192 === 0 && i > 0 ? '\ude00' : 'é')).join('');
      for (let offset = start; offset < text.length;) offset = check(text, offset, 1);
    }
    // A client offset in the middle of a pair (the second half first, escaped alone, as the slice's JSON).
    const pairs = '😀'.repeat(500_000);
    for (const offset of [1, 3, 8191, 8193]) check(pairs, offset, 2);
  });

  test('escaped text near the byte limit, lone surrogates (six bytes each) at chunk ends', () => {
    const text = randomText(1_000_000, ['\u0001', '\ud83d', '\ude00', '"']);
    for (let offset = 0; offset < text.length;) offset = check(text, offset, undefined);
  });
});

describe('review25a: a bad measure framed in place', () => {
  test("throws, leaves the piece's bytes as they were, and a later framing (a copy) is right", () => {
    for (const wrong of [-9, -1, 1, 4, 3000]) {
      const text = 'é 😀 words "q" \u0001'.repeat(20_000);
      const { end, json } = exportPiece(text, 0);
      const copy = Buffer.from(json);
      const result = { text: text.slice(0, end), offset: 0 };
      const wire = envelopeWire(ok(withDataText(result, jsonWithField(result, 'text', json)), 1)) as MeasuredText;
      assert.throws(() => measuredFrame({ parts: wire.parts, bytes: wire.bytes + wrong }), /measuredFrame/);
      assert.ok(json.equals(copy), `bytes unchanged (${wrong})`);
      const again = measuredFrame(wire);
      assert.notEqual(again.buffer, json.buffer, 'the room was taken: copied');
      assert.ok(again.equals(textFrame(JSON.stringify(ok(result, 1)))));
    }
  });
});
