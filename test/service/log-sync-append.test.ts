// The log's line is appended by a synchronous write once its file is open (a hand-off to libuv's pool
// less a turn): in the file when write() returns, never ahead of a line still queued for the pool, and
// the file goes back to the pool for a while after one slow such write (a minute, doubled each time the
// loop's writes are found slow again, up to an hour); a failed one is reported once and
// its line written by the queue after the file is reopened. Real files in a temp dir.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { RotatingFile, SLOW_BACKOFF_MAX_MS, SLOW_BACKOFF_MS, SLOW_LINE_WRITE_MS, type RotatingFileOptions } from '../../src/log/rotating-file';
import { tempDir } from '../helpers/temp';

const inFile = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');

/** A log in a temp dir (1 MiB before rotation) whose file is open: one line written through the pool. */
async function opened(t: TestContext, options: Partial<RotatingFileOptions> = {}): Promise<{ log: RotatingFile; file: string }> {
  const temp = await tempDir('ra-log-sync-');
  t.after(temp.cleanup);
  const file = join(temp.dir, 'service.log');
  const log = new RotatingFile(file, { maxBytes: 1 << 20, maxFiles: 1, ...options });
  t.after(() => log.close());
  log.write('open\n');
  await log.flush();
  return { log, file };
}

test('a line is in the file when write returns once it is open, and never overtakes a line queued for the pool', async (t) => {
  const temp = await tempDir('ra-log-sync-');
  t.after(temp.cleanup);
  const file = join(temp.dir, 'service.log');
  const log = new RotatingFile(file, { maxBytes: 9, maxFiles: 1 });
  t.after(() => log.close());

  log.write('a\n'); // opens the file: through the pool
  log.write('b\n'); // behind it in the queue
  assert.equal(inFile(file), '', 'the opening write is on the pool');
  await log.flush();
  log.write('c\n');
  assert.equal(inFile(file), 'a\nb\nc\n', 'appended at once');

  log.write('dddd\n'); // would pass maxBytes: the queue rotates first
  log.write('e\n'); // the pool is busy with the line before: queued behind it, not written ahead
  assert.equal(inFile(file), 'a\nb\nc\n');
  await log.flush();
  assert.equal(await readFile(`${file}.1`, 'utf8'), 'a\nb\nc\n');
  assert.equal(inFile(file), 'dddd\ne\n');
  log.write('f\n');
  assert.equal(inFile(file), 'dddd\ne\nf\n', 'the size after rotation counted: it fits');
});

test('after one slow synchronous write every line goes through the pool', async (t) => {
  const temp = await tempDir('ra-log-sync-');
  t.after(temp.cleanup);
  const file = join(temp.dir, 'service.log');
  let clock = 0;
  // Each reading of the clock is later than the last by more than the limit: the first write is "slow".
  const log = new RotatingFile(file, { maxBytes: 1 << 20, maxFiles: 1, now: () => (clock += SLOW_LINE_WRITE_MS + 1) });
  t.after(() => log.close());

  log.write('open\n');
  await log.flush();
  log.write('slow\n');
  assert.equal(inFile(file), 'open\nslow\n', 'written at once, and timed');
  log.write('later\n');
  assert.equal(inFile(file), 'open\nslow\n', 'handed to the pool');
  await log.flush();
  assert.equal(inFile(file), 'open\nslow\nlater\n');
});

test('after a slow synchronous write the lines go through the pool for a minute, then try the loop again; found slow again, for twice as long, up to an hour', async (t) => {
  const temp = await tempDir('ra-log-sync-');
  t.after(temp.cleanup);
  const file = join(temp.dir, 'service.log');
  // A clock the test moves; each reading adds `step`, which a slow line sets for the time of its write.
  let clock = 0;
  let step = 0;
  const log = new RotatingFile(file, { maxBytes: 1 << 20, maxFiles: 1, now: () => (clock += step) });
  t.after(() => log.close());
  let lines = 0;
  /** Writes a line; whether it was in the file when write() returned (the loop's write) rather than queued for the pool. */
  const onLoop = async (slow = false) => {
    const line = `line ${++lines}\n`;
    step = slow ? SLOW_LINE_WRITE_MS + 1 : 0;
    log.write(line);
    step = 0;
    const written = inFile(file).endsWith(line);
    await log.flush();
    assert.ok(inFile(file).endsWith(line), `${line.trim()} in the file`);
    return written;
  };
  log.write('open\n');
  await log.flush();

  assert.equal(await onLoop(), true, 'a healthy line: on the loop');
  assert.equal(await onLoop(true), true, 'the slow line itself was written on the loop');
  assert.equal(await onLoop(), false, 'then the pool');
  clock += SLOW_BACKOFF_MS - 200;
  assert.equal(await onLoop(), false, 'still the pool just before the minute is over');
  clock += 300;
  assert.equal(await onLoop(), true, 'a minute later: the loop again');
  assert.equal(await onLoop(true), true, 'slow again');
  clock += SLOW_BACKOFF_MS + 300;
  assert.equal(await onLoop(), false, 'a minute is not enough the second time');
  clock += SLOW_BACKOFF_MS;
  assert.equal(await onLoop(), true, 'two minutes: the loop again');
  // Slow again and again: 4, 8, 16, 32 minutes, then an hour, and never longer.
  for (const minutes of [4, 8, 16, 32, 60, 60, 60]) {
    assert.equal(await onLoop(true), true);
    clock += minutes * 60_000 - 200;
    assert.equal(await onLoop(), false, `the pool for ${minutes} minutes`);
    clock += 300;
    assert.equal(await onLoop(), true, `after ${minutes} minutes, the loop again`);
  }
  assert.equal(SLOW_BACKOFF_MAX_MS, 60 * 60_000);
});

test('a failed synchronous write is reported once; its line is written by the queue on a reopened file', async (t) => {
  const errors: unknown[] = [];
  const { log, file } = await opened(t, { onError: (error) => errors.push(error) });

  const { writeSync } = fs;
  let failing = true;
  fs.writeSync = ((...args: Parameters<typeof writeSync>) => {
    if (failing) throw Object.assign(new Error('ENOSPC: no space left on device (fake)'), { code: 'ENOSPC' });
    return writeSync(...args);
  }) as typeof writeSync;
  t.after(() => (fs.writeSync = writeSync));

  log.write('refused\n');
  failing = false;
  assert.equal(errors.length, 1);
  assert.equal((errors[0] as NodeJS.ErrnoException).code, 'ENOSPC');
  await log.flush();
  assert.equal(inFile(file), 'open\nrefused\n', 'nothing lost, nothing twice');
  log.write('again\n');
  assert.equal(inFile(file), 'open\nrefused\nagain\n', 'a write that worked ends the failure: appended at once again');
  assert.equal(errors.length, 1);
});

test("where the loop is shared (the editor's extension host: writeOnLoop false) every line goes through the pool", async (t) => {
  const { log, file } = await opened(t, { writeOnLoop: false });
  log.write('line\n');
  assert.equal(inFile(file), 'open\n', 'not written on the loop');
  await log.flush();
  assert.equal(inFile(file), 'open\nline\n');
});

test('the guard counts writes that add up (several just under the limit within a second) and a slow write that then failed', async (t) => {
  const temp = await tempDir('ra-log-sync-');
  t.after(temp.cleanup);
  // Each write takes 4 ms by this clock (its two readings), the window's reading 4 more: 12 a write.
  let clock = 0;
  const file = join(temp.dir, 'a.log');
  const log = new RotatingFile(file, { maxBytes: 1 << 20, maxFiles: 1, now: () => (clock += 4) });
  t.after(() => log.close());
  log.write('open\n');
  await log.flush();
  let expected = 'open\n';
  for (let i = 1; i <= 6; i++) {
    log.write(`${i}\n`);
    expected += `${i}\n`;
    assert.equal(inFile(file), expected, `write ${i} (${4 * i} ms in the second): on the loop`);
  }
  log.write('7\n');
  assert.equal(inFile(file), expected, 'past 20 ms in the second: on the pool');
  await log.flush();
  assert.equal(inFile(file), `${expected}7\n`);

  const { writeSync } = fs;
  t.after(() => (fs.writeSync = writeSync));
  let slowClock = 0;
  const errors: unknown[] = [];
  const failing = new RotatingFile(join(temp.dir, 'b.log'), { maxBytes: 1 << 20, maxFiles: 1, now: () => slowClock, onError: (e) => errors.push(e) });
  t.after(() => failing.close());
  failing.write('open\n');
  await failing.flush();
  fs.writeSync = (() => {
    slowClock += SLOW_LINE_WRITE_MS + 10; // hung for a while, then
    throw Object.assign(new Error('EIO: i/o error (fake)'), { code: 'EIO' });
  }) as typeof writeSync;
  failing.write('hung\n');
  fs.writeSync = writeSync;
  await failing.flush();
  assert.equal(errors.length, 1);
  failing.write('after\n');
  assert.equal(inFile(join(temp.dir, 'b.log')), 'open\nhung\n', 'back on the pool: not written on the loop');
  await failing.flush();
  assert.equal(inFile(join(temp.dir, 'b.log')), 'open\nhung\nafter\n');
});

test('a synchronous write that failed part way: the queue ends the line, so the next starts on its own', async (t) => {
  const temp = await tempDir('ra-log-sync-');
  t.after(temp.cleanup);
  const file = join(temp.dir, 'service.log');
  const log = new RotatingFile(file, { maxBytes: 1 << 20, maxFiles: 1, onError: () => {} });
  t.after(() => log.close());
  log.write('{"a":1}\n');
  await log.flush();
  const { writeSync } = fs;
  t.after(() => (fs.writeSync = writeSync));
  let calls = 0;
  fs.writeSync = ((fd: number, buffer: Buffer, offset: number) => {
    calls++;
    if (calls === 1) return writeSync(fd, buffer, offset, 4); // part of it
    throw Object.assign(new Error('EIO: i/o error (fake)'), { code: 'EIO' });
  }) as typeof writeSync;
  log.write('{"b":2}\n');
  fs.writeSync = writeSync;
  log.write('{"c":3}\n');
  await log.flush();
  const lines = inFile(file).split('\n');
  assert.deepEqual(lines, ['{"a":1}', '{"b"', '{"c":3}', ''], 'the cut line ends; the next is whole');
});

test('healthy writes (well under a millisecond each) do not add up: a thousand lines stay on the loop', async (t) => {
  let clock = 0;
  // 0.05 ms a reading: each write 0.05 ms, 50 ms in all, within one second.
  const { log, file } = await opened(t, { now: () => (clock += 0.05) });
  for (let i = 0; i < 1000; i++) log.write(`${i}\n`);
  assert.equal(inFile(file).split('\n').length, 1002, 'every line appended at once');
});
