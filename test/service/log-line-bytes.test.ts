// A log line over MAX_LOG_LINE_BYTES (UTF-8) is replaced by a note, at its bytes' bound, not its characters'
// (s24, agent24: serializeLine counts the bytes only when the characters could exceed it), and a line's time
// is the moment it was stamped in toISOString's form.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FileLogger, MAX_LOG_LINE_BYTES } from '../../src/log/file-logger';

test('lines at and over the byte bound: three-byte, four-byte and one-byte characters; the time as toISOString gives it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ra-log-bytes-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const logger = FileLogger.inDataDir(dir, { level: 'info' });
  // The line's frame: {"time":"...","level":"info","event":"e","v":"<text>"} plus its newline.
  const frame = Buffer.byteLength(JSON.stringify({ time: new Date(0).toISOString(), level: 'info', event: 'e', v: '' }));
  const room = MAX_LOG_LINE_BYTES - frame;
  const cases: { text: string; kept: boolean }[] = [
    { text: '€'.repeat(Math.floor(room / 3)), kept: true }, // 3 bytes a character, at the bound
    { text: '€'.repeat(Math.floor(room / 3) + 1), kept: false }, // one character over
    { text: '😀'.repeat(Math.floor(room / 4)), kept: true }, // 4 bytes, two UTF-16 units
    { text: '😀'.repeat(Math.floor(room / 4) + 1), kept: false },
    // One byte a character; not one run of letters (the redactor's URL pattern is slow on those: see docs/design.md, s24 agent24).
    { text: `${'a '.repeat(Math.floor(room / 2))}${room % 2 ? 'a' : ''}`, kept: true },
    { text: `${'a '.repeat(Math.floor(room / 2))}${room % 2 ? 'a ' : 'a'}`, kept: false },
    { text: '\ud800'.repeat(Math.floor(room / 3) + 1), kept: false }, // a lone surrogate: 3 bytes (U+FFFD)
  ];
  const before = Date.now();
  for (const { text } of cases) logger.info('e', { v: text });
  const after = Date.now();
  await logger.close();
  const lines = (await readFile(join(dir, 'service.log'), 'utf8'))
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.equal(lines.length, cases.length);
  cases.forEach(({ text, kept }, i) => {
    const line = lines[i];
    const time = line.time as string;
    assert.equal(new Date(time).toISOString(), time, 'toISOString form');
    assert.ok(Date.parse(time) >= before && Date.parse(time) <= after, 'stamped when logged');
    if (kept) assert.equal(line.v, text.replaceAll('\ud800', '\ufffd'), `case ${i} kept whole`);
    else assert.deepEqual({ ...line, time: 'T', line_bytes: typeof line.line_bytes }, { time: 'T', level: 'info', event: 'e', truncated: true, line_bytes: 'number' }, `case ${i} replaced`);
    if (!kept) assert.ok((line.line_bytes as number) > MAX_LOG_LINE_BYTES - 1, `case ${i}: its bytes named`);
  });
});
