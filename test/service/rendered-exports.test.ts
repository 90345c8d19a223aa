// The renderings kept between an export's pieces (src/commands/rendered-exports.ts) and the piece sizes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RenderedExports, renderedExportKey } from '../../src/commands/rendered-exports';
import { EXPORT_PIECE_CHARS, exportPiece } from '../../src/commands/conversation-export';
import { ok } from '../../src/protocol/envelope';
import { envelopeText, envelopeWire, jsonWithField, textOf, withDataText, type MeasuredText } from '../../src/protocol/wire-text';
import { measuredFrame, textFrame } from '../../src/transport/connections/ws-frames';

describe('RenderedExports', () => {
  test('a piece after the first is a slice of the kept rendering: render runs once per key', async () => {
    const kept = new RenderedExports();
    let renders = 0;
    const render = async () => `text ${(renders += 1)}`;
    const key = renderedExportKey('c1', 7, 'json');
    assert.equal(await kept.get(key, render), 'text 1');
    assert.equal(await kept.get(key, render), 'text 1');
    assert.equal(await kept.get(renderedExportKey('c1', 8, 'json'), render), 'text 2', 'another until is another export');
    assert.equal(await kept.get(renderedExportKey('c1', 7, 'markdown'), render), 'text 3', 'another format too');
    assert.equal(renders, 3);
  });

  test('bounded in characters: the oldest goes first, and a text over the bound is not kept', async () => {
    const kept = new RenderedExports(10);
    await kept.get('a', async () => 'x'.repeat(6));
    await kept.get('b', async () => 'y'.repeat(6));
    assert.equal(kept.size, 1);
    assert.equal(await kept.get('b', async () => 'again'), 'y'.repeat(6));
    assert.equal(await kept.get('a', async () => 'again'), 'again', 'a was pushed out');
    await kept.get('big', async () => 'z'.repeat(11));
    assert.equal(await kept.get('big', async () => 'rendered again'), 'rendered again');
  });

  test('kept for a while after the last use, and forgotten with the conversation', async () => {
    let now = 0;
    const kept = new RenderedExports(1000, 100, () => now);
    const key = renderedExportKey('c1', 1, 'json');
    await kept.get(key, async () => 'first');
    now = 90;
    assert.equal(await kept.get(key, async () => 'second'), 'first');
    now = 180;
    assert.equal(await kept.get(key, async () => 'second'), 'first', 'each use renews it');
    now = 300;
    assert.equal(await kept.get(key, async () => 'third'), 'third', 'expired');
    kept.forget('c1');
    assert.equal(kept.size, 0);
  });
});

describe('RenderedExports.piece: the next piece made ahead while the client reads this one', () => {
  const immediate = () => new Promise((done) => setImmediate(done));
  const text = `${'\u0001'.repeat(EXPORT_PIECE_CHARS - 1)}😀${'plain "words" '.repeat(100_000)}`;

  test('a download in order gets every piece made ahead after the first, each the piece exportPiece makes', async () => {
    const kept = new RenderedExports();
    const key = renderedExportKey('c1', 7, 'markdown');
    await kept.get(key, async () => text);
    let offset = 0;
    for (let i = 0; offset < text.length; i += 1) {
      assert.equal(kept.piecesAhead, i === 0 ? 0 : 1, `before piece ${i}`);
      const piece = kept.piece(key, text, offset);
      assert.deepEqual(piece, exportPiece(text, offset));
      assert.equal(kept.piecesAhead, 0, 'taken');
      await immediate();
      offset = piece.end;
    }
    assert.equal(kept.piecesAhead, 0, 'nothing ahead of the last piece');
  });

  test('a piece asked for before it was made ahead is made once; none for a rendering not kept; dropped with the conversation', async () => {
    const kept = new RenderedExports();
    const key = renderedExportKey('c1', 7, 'markdown');
    await kept.get(key, async () => text);
    const first = kept.piece(key, text, 0);
    kept.piece(key, text, first.end);
    await immediate();
    assert.equal(kept.piecesAhead, 1, 'only the one after the second');
    kept.forget('c1');
    assert.equal(kept.piecesAhead, 0);
    const notKept = new RenderedExports(10);
    await notKept.get(key, async () => text);
    notKept.piece(key, text, 0);
    await immediate();
    assert.equal(notKept.piecesAhead, 0, 'a rendering over the bound is not kept, nor its pieces');
  });

  test('at most four pieces made ahead at once; six downloads in turns do not push out each other (no piece made twice)', async () => {
    // Long enough that every download still has pieces after three rounds.
    const long = text + 'plain "words" '.repeat(200_000);
    let now = 0;
    const kept = new RenderedExports(32 * 1024 * 1024, 120_000, () => now);
    const keys = Array.from({ length: 6 }, (_, c) => renderedExportKey(`c${c}`, 1, 'json'));
    for (const key of keys) await kept.get(key, async () => long);
    const offsets = keys.map(() => 0);
    let asked = 0;
    for (let round = 0; round < 3; round += 1) {
      for (const [d, key] of keys.entries()) {
        offsets[d] = kept.piece(key, long, offsets[d]!).end;
        asked += 1;
        await immediate();
        assert.ok(kept.piecesAhead <= 4, `${kept.piecesAhead} held`);
      }
    }
    // The first four downloads' pieces were made once and found made; the other two's made when asked.
    assert.equal(kept.piecesServedAhead, 4 * 2, `${kept.piecesServedAhead} of ${asked} served from ahead`);
    // A download that stopped: after 10 s its held piece gives way to a new one.
    now += 10_001;
    const fresh = renderedExportKey('c9', 1, 'json');
    await kept.get(fresh, async () => long);
    kept.piece(fresh, long, 0);
    await immediate();
    assert.equal(kept.piecesAhead, 4);
    kept.piece(fresh, long, exportPiece(long, 0).end);
    assert.equal(kept.piecesServedAhead, 4 * 2 + 1, "the new download's piece was made ahead");
  });

  test('a conversation deleted while its export renders: the rendering is not kept, nothing made ahead for it', async () => {
    const kept = new RenderedExports();
    const key = renderedExportKey('gone', 3, 'json');
    let finish!: (t: string) => void;
    const pending = kept.get(key, () => new Promise<string>((done) => (finish = done)));
    kept.forget('gone');
    finish(text);
    kept.piece(key, await pending, 0);
    await immediate();
    assert.equal(kept.size, 0);
    assert.equal(kept.piecesAhead, 0);
  });
});

describe('exportPiece', () => {
  const frameBytes = (text: string) => Buffer.byteLength(JSON.stringify({ status: 'ok', data: { text } }));

  test('plain text comes in pieces several times the least size, each frame under 1 MiB', () => {
    const text = 'plain words '.repeat(300_000);
    const end = exportPiece(text, 0).end;
    assert.ok(end > 4 * EXPORT_PIECE_CHARS, `a piece of ${end} characters`);
    assert.ok(frameBytes(text.slice(0, end)) < 1024 * 1024);
  });

  test('text escaped to six bytes a character comes in pieces of at least the least size, each frame under 1 MiB', () => {
    const text = '\u0001'.repeat(1_000_000);
    for (let offset = 0; offset < text.length;) {
      const { end, json } = exportPiece(text, offset);
      assert.ok(end - offset >= EXPORT_PIECE_CHARS || end === text.length, `a piece of ${end - offset} characters`);
      assert.ok(frameBytes(text.slice(offset, end)) < 1024 * 1024);
      assert.ok(json.equals(Buffer.from(JSON.stringify(text.slice(offset, end)))));
      offset = end;
    }
  });

  test('text of three bytes a character: as many characters as fit, more than a halving of the most would give', () => {
    const text = '漢字かな'.repeat(200_000);
    const end = exportPiece(text, 0).end;
    assert.ok(end > (768 * 1024) / 4 && end < 768 * 1024, `a piece of ${end} characters`);
    assert.ok(frameBytes(text.slice(0, end)) < 1024 * 1024);
  });

  test('never between the halves of a surrogate pair, at the end of a piece or inside it (its JSON is serialized in chunks), and the last piece is the rest', () => {
    // Escaped text ends its first piece at 147,456 characters (18 chunks of 8 K), plain text at 786,432:
    // a pair astride each of those ends, and astride every chunk's end in between.
    const escaped = `${'\u0001'.repeat(147_455)}😀${'\u0001'.repeat(200_000)}`;
    const end = exportPiece(escaped, 0).end;
    assert.equal(end, 147_455, 'the pair goes to the next piece whole');
    const plain = Array.from({ length: 100 * 8192 }, (_, i) => (i % 8192 === 8191 ? '\ud83d' : i % 8192 === 0 && i > 0 ? '\ude00' : 'p')).join('');
    assert.equal(exportPiece(plain, 0).end, 768 * 1024 - 1);
    for (const text of [escaped, plain]) {
      let offset = 0;
      while (offset < text.length) {
        const piece = exportPiece(text, offset);
        // A chunk cut between the halves would carry each one escaped alone (\ud83d\ude00), not the pair's four bytes.
        assert.ok(piece.json.equals(Buffer.from(JSON.stringify(text.slice(offset, piece.end)))), `the piece at ${offset}`);
        offset = piece.end;
      }
      assert.equal(offset, text.length);
      assert.equal(exportPiece(text, text.length - 5).end, text.length, 'the last piece is the rest');
    }
  });
});

describe("an export piece's answer carries the JSON its measure made", () => {
  // Texts a hand-made JSON could get wrong: quotes and the marker itself inside other fields, escapes,
  // characters beyond the BMP, a lone surrogate, control characters, the empty text.
  const texts = ['plain', '', 'a "quoted" \\ back\\slash', '"text":"" inside', '😀 and \ud800 alone', '\u0000\u0001\n\t', 'é'.repeat(1000)];
  const names = ['plain', 'with "text":"" in it', '"text":""', 'a\\b', 'naïve 漢字 😀'];
  test('jsonWithField gives exactly JSON.stringify of the result, in parts, and its UTF-8 length', () => {
    for (const text of texts) {
      for (const file_name of names) {
        const result = { conversation_id: 'c"1', format: 'markdown', file_name, text, offset: 0, next_offset: null, until: '"text":""' };
        const made = jsonWithField(result, 'text', Buffer.from(JSON.stringify(text)));
        assert.equal(textOf(made), JSON.stringify(result));
        assert.equal(made.bytes, Buffer.byteLength(JSON.stringify(result)));
      }
    }
  });

  test('envelopeText of such a result is JSON.stringify of its envelope, with an id or without; envelopeWire the same in measured parts', () => {
    for (const text of texts) {
      const result = { conversation_id: 'c1', file_name: 'naïve 漢字 😀', text, next_offset: 5 };
      const made = withDataText(result, jsonWithField(result, 'text', exportPiece(text, 0).json));
      for (const id of [undefined, 7, 'req "1"', 'é 😀']) {
        const expected = JSON.stringify(ok(result, id));
        assert.equal(envelopeText(ok(made, id)), expected);
        const wire = envelopeWire(ok(made, id));
        assert.equal(typeof wire, 'object', 'in measured parts');
        assert.equal(textOf(wire), expected);
        assert.equal((wire as MeasuredText).bytes, Buffer.byteLength(expected));
      }
    }
  });

  test("a piece's JSON is its slice's in UTF-8, on every piece of a long text", () => {
    const text = `${'\u0001'.repeat(EXPORT_PIECE_CHARS - 1)}😀${'plain "words" é \ud800 '.repeat(100_000)}`;
    for (let offset = 0; offset < text.length;) {
      const { end, json } = exportPiece(text, offset);
      assert.ok(json.equals(Buffer.from(JSON.stringify(text.slice(offset, end)))));
      assert.equal(JSON.parse(json.toString()), text.slice(offset, end));
      offset = end;
    }
  });
});

describe("an export piece's frame (ws-frames.ts measuredFrame)", () => {
  test('is the frame of its joined text, byte for byte, for texts of every header size, its big part in bytes or not', () => {
    for (const big of ['', 'x'.repeat(200), 'é😀"\\'.repeat(20_000)]) {
      const parts = ['{"status":"ok","data":{"a":"ü","text":', JSON.stringify(big), ',"id":"漢"}}'];
      const joined = parts.join('');
      const bytes = Buffer.byteLength(joined);
      assert.ok(measuredFrame({ parts, bytes }).equals(textFrame(joined)));
      assert.ok(measuredFrame({ parts: [parts[0], Buffer.from(parts[1]), parts[2]], bytes }).equals(textFrame(joined)));
    }
  });

  test("is written around a piece's bytes in their own buffer (no copy), the frame of the joined text, for every head size and id", () => {
    for (const text of ['', 'x'.repeat(200), 'é😀"\\\n'.repeat(20_000), 'plain words '.repeat(100_000)]) {
      for (const id of [undefined, 7, 'req "1" é']) {
        const { end, json } = exportPiece(text, 0);
        const result = { conversation_id: 'c1', file_name: 'naïve 漢字 😀.md', text: text.slice(0, end), offset: 0, next_offset: end };
        const wire = envelopeWire(ok(withDataText(result, jsonWithField(result, 'text', json)), id)) as MeasuredText;
        const frame = measuredFrame(wire);
        assert.ok(frame.equals(textFrame(JSON.stringify(ok(result, id)))));
        assert.equal(frame.buffer, json.buffer, "in the piece's buffer");
      }
    }
  });

  test('the same bytes framed again are copied: the first frame, which may still wait in its queue, stays as it was', () => {
    const result = { text: 'some words', offset: 0 };
    const wire = (id: number) => envelopeWire(ok(withDataText(result, jsonWithField(result, 'text', json)), id)) as MeasuredText;
    const { json } = exportPiece(result.text, 0);
    const first = measuredFrame(wire(1));
    const expected = Buffer.from(first);
    const second = measuredFrame(wire(22));
    assert.notEqual(second.buffer, json.buffer);
    assert.ok(second.equals(textFrame(JSON.stringify(ok(result, 22)))));
    assert.ok(first.equals(expected));
  });

  test('refuses a wrong measure when written in place too', () => {
    const text = 'é 😀 words';
    for (const wrong of [-9, -5, -4, -1, 1, 4]) {
      const parts = ['{"a":"ü","text":', exportPiece(text, 0).json, ',"id":"漢"}'];
      const bytes = Buffer.byteLength(textOf({ parts, bytes: 0 }));
      assert.throws(() => measuredFrame({ parts, bytes: bytes + wrong }), /measuredFrame/, `measured ${wrong} off`);
    }
  });

  test('refuses parts whose measure is wrong (a frame whose length lies would corrupt the stream)', () => {
    for (const parts of [
      ['{"a":', '"é 😀"', '}'],
      ['{"a":', Buffer.from('"é 😀"'), '}'],
    ]) {
      const bytes = Buffer.byteLength(textOf({ parts, bytes: 0 }));
      for (const wrong of [bytes - 1, bytes - 4, bytes - 5, bytes - 9, bytes + 1]) assert.throws(() => measuredFrame({ parts, bytes: wrong }), /measuredFrame/, `measured ${wrong} of ${bytes}`);
      assert.equal(measuredFrame({ parts, bytes }).length, 2 + bytes);
    }
  });
});
