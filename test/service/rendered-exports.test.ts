// The renderings kept between an export's pieces (src/commands/rendered-exports.ts) and the piece sizes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RenderedExports, renderedExportKey } from '../../src/commands/rendered-exports';
import { EXPORT_PIECE_CHARS, pieceEnd } from '../../src/commands/conversation-export';

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

describe('pieceEnd', () => {
  const frameBytes = (text: string) => Buffer.byteLength(JSON.stringify({ status: 'ok', data: { text } }));

  test('plain text comes in pieces several times the least size, each frame under 1 MiB', () => {
    const text = 'plain words '.repeat(300_000);
    const end = pieceEnd(text, 0);
    assert.ok(end > 4 * EXPORT_PIECE_CHARS, `a piece of ${end} characters`);
    assert.ok(frameBytes(text.slice(0, end)) < 1024 * 1024);
  });

  test('text escaped to six bytes a character falls back to the least size, under 1 MiB', () => {
    const text = '\u0001'.repeat(1_000_000);
    const end = pieceEnd(text, 0);
    assert.equal(end, EXPORT_PIECE_CHARS);
    assert.ok(frameBytes(text.slice(0, end)) < 1024 * 1024);
  });

  test('never between the halves of a surrogate pair, and the last piece is the rest', () => {
    const text = `${'\u0001'.repeat(EXPORT_PIECE_CHARS - 1)}😀${'\u0001'.repeat(200_000)}`;
    const end = pieceEnd(text, 0);
    assert.equal(end, EXPORT_PIECE_CHARS - 1, 'the pair goes to the next piece whole');
    let offset = end;
    while (offset < text.length) offset = pieceEnd(text, offset);
    assert.equal(offset, text.length);
    assert.equal(pieceEnd(text, text.length - 5), text.length, 'the last piece is the rest');
  });
});
