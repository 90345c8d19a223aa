// The pure parts of attachments (issue 14): which models see images, image types by their bytes, safe
// file names for the workspace, and the page's SHA-256 for http LAN pages (checked against node:crypto).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { imageTypeOf, safeFileName } from '../../src/agent/attachments/content';
import { seesImages } from '../../src/agent/attachments/vision';
import { sha256Hex } from '../../src/web/chat/sha256';

test('vision: known models of each provider, the service.json override first, never the editor models', () => {
  const none = { vision_models: {} };
  assert.equal(seesImages({ provider: 'openai', ...none }, 'gpt-4o-mini'), true);
  assert.equal(seesImages({ provider: 'openai', ...none }, 'gpt-3.5-turbo'), false);
  assert.equal(seesImages({ provider: 'openai', ...none }, 'o1-mini'), false);
  assert.equal(seesImages({ provider: 'openai', ...none }, 'llava:13b'), true);
  assert.equal(seesImages({ provider: 'anthropic', ...none }, 'claude-3-5-haiku-latest'), true);
  assert.equal(seesImages({ provider: 'anthropic', ...none }, 'claude-opus-4-1'), true);
  assert.equal(seesImages({ provider: 'anthropic', ...none }, 'claude-2.1'), false);
  assert.equal(seesImages({ provider: 'openai', vision_models: { 'my-local-vlm': true } }, 'my-local-vlm'), true);
  assert.equal(seesImages({ provider: 'openai', vision_models: { 'gpt-4o': false } }, 'gpt-4o'), false);
  assert.equal(seesImages({ provider: 'vscode', vision_models: { 'gpt-4o': true } }, 'gpt-4o'), false);
});

test('image types come from the bytes: JPEG, PNG, GIF, WebP; anything else (SVG text, a PDF, a short file) is not an image', () => {
  assert.equal(imageTypeOf(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10])), 'image/jpeg');
  assert.equal(imageTypeOf(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0])), 'image/png');
  assert.equal(imageTypeOf(Buffer.from('GIF89a......')), 'image/gif');
  assert.equal(imageTypeOf(Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1')), 'image/webp');
  assert.equal(imageTypeOf(Buffer.from('RIFF\x10\x00\x00\x00WAVEfmt ', 'latin1')), undefined);
  assert.equal(imageTypeOf(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')), undefined);
  assert.equal(imageTypeOf(Buffer.from('%PDF-1.7')), undefined);
  assert.equal(imageTypeOf(Buffer.from([0xff, 0xd8])), undefined);
});

test('file names saved into the workspace: the last segment, no traversal, hidden or control characters', () => {
  assert.equal(safeFileName('../../etc/passwd'), 'passwd');
  assert.equal(safeFileName('C:\\Users\\me\\report.pdf'), 'report.pdf');
  assert.equal(safeFileName('..'), 'attachment');
  assert.equal(safeFileName('.bashrc'), 'bashrc');
  assert.equal(safeFileName('a\u0000b\nc?.txt'), 'a_b_c_.txt');
  assert.equal(safeFileName(''), 'attachment');
  const long = safeFileName(`${'x'.repeat(300)}.csv`);
  assert.equal(long.length, 100);
  assert.ok(long.endsWith('.csv'), 'the extension is kept');
});

test("the page's SHA-256, with crypto.subtle and without (an http page: @noble's), matches node:crypto at every padding boundary", async () => {
  for (const length of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 100_003]) {
    const bytes = Uint8Array.from({ length }, (_, i) => (i * 31 + 7) & 0xff);
    const expected = createHash('sha256').update(bytes).digest('hex');
    assert.equal(await sha256Hex(bytes, null), expected, `length ${length}, no crypto.subtle`);
    assert.equal(await sha256Hex(bytes), expected, `length ${length}, crypto.subtle`);
  }
});
