// history.db's check for a file cut short (store/history/integrity.ts cutBeforeOpen), on files and WALs
// made byte by byte here from SQLite's documented formats (the database header, the WAL's header and
// frame headers), so each case states exactly which pages the file and its WAL hold.
import assert from 'node:assert/strict';
import { open, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { cutBeforeOpen } from '../../src/store/history/integrity';
import { tempDir } from '../helpers/store-utils';

const PAGE = 4096;
const SALTS = [0x11111111, 0x22222222];
const OLD_SALTS = [0x33333333, 0x44444444];

/** A database file of `pages` pages (sparse: only its header written) whose header counts `counted`. */
async function dbFile(file: string, pages: number, counted = pages): Promise<void> {
  const header = Buffer.alloc(100);
  header.write('SQLite format 3\0', 0, 'latin1');
  header.writeUInt16BE(PAGE, 16);
  header.writeUInt32BE(7, 24); // the change counter
  header.writeUInt32BE(counted, 28);
  header.writeUInt32BE(7, 92); // version-valid-for: the page count is valid
  await writeFile(file, header);
  await truncate(file, pages * PAGE);
}

interface Frame {
  page: number;
  /** The database's size in pages after the commit this frame ends; 0 for a frame inside a commit. */
  commit: number;
  salts?: number[];
  /** Its checksum made wrong, as a torn write leaves it. */
  torn?: boolean;
}

/** The WAL format's checksum of `bytes`, continuing from `sums`: words little-endian (magic 0x377f0682) or big-endian (0x377f0683). */
function checksum(sums: [number, number], bytes: Buffer, bigEndian: boolean): [number, number] {
  let [a, b] = sums;
  const word = (i: number) => (bigEndian ? bytes.readUInt32BE(i) : bytes.readUInt32LE(i));
  for (let i = 0; i < bytes.length; i += 8) {
    a = (a + word(i) + b) % 2 ** 32;
    b = (b + word(i + 4) + a) % 2 ** 32;
  }
  return [a, b];
}

/** A WAL of `frames` (their pages' contents a byte pattern: only the headers and checksums are read). */
async function walFile(file: string, frames: Frame[], tornHeader = false, bigEndian = false): Promise<void> {
  const header = Buffer.alloc(32);
  header.writeUInt32BE(bigEndian ? 0x377f0683 : 0x377f0682, 0);
  header.writeUInt32BE(3007000, 4);
  header.writeUInt32BE(PAGE, 8);
  header.writeUInt32BE(SALTS[0], 16);
  header.writeUInt32BE(SALTS[1], 20);
  let sums = checksum([0, 0], header.subarray(0, 24), bigEndian);
  header.writeUInt32BE(sums[0], 24);
  header.writeUInt32BE(tornHeader ? (sums[1] ^ 1) >>> 0 : sums[1], 28);
  const parts = [header];
  for (const f of frames) {
    const frame = Buffer.alloc(24 + PAGE, f.page & 0xff);
    frame.writeUInt32BE(f.page, 0);
    frame.writeUInt32BE(f.commit, 4);
    frame.writeUInt32BE((f.salts ?? SALTS)[0], 8);
    frame.writeUInt32BE((f.salts ?? SALTS)[1], 12);
    sums = checksum(checksum(sums, frame.subarray(0, 8), bigEndian), frame.subarray(24), bigEndian);
    frame.writeUInt32BE(sums[0], 16);
    frame.writeUInt32BE(f.torn ? (sums[1] ^ 1) >>> 0 : sums[1], 20);
    parts.push(frame);
  }
  await writeFile(`${file}-wal`, Buffer.concat(parts));
}

/** Frames of pages `from`..`to` as one commit leaving the database `size` pages long. */
function commit(from: number, to: number, size: number, salts?: number[]): Frame[] {
  return Array.from({ length: to - from + 1 }, (_, i) => ({ page: from + i, commit: from + i === to ? size : 0, salts }));
}

async function fileIn(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { dir, cleanup } = await tempDir('history-integrity-test-');
  t.after(cleanup);
  return path.join(dir, 'history.db');
}

test('a whole file, with or without a WAL, is not cut', async (t) => {
  const file = await fileIn(t);
  await dbFile(file, 10);
  assert.equal(cutBeforeOpen(file), null);
  await walFile(file, commit(3, 12, 12)); // grew to 12 pages in the WAL
  assert.equal(cutBeforeOpen(file), null);
});

test('a file shorter than its header counts, no WAL: cut', async (t) => {
  const file = await fileIn(t);
  await dbFile(file, 5, 10);
  assert.match(cutBeforeOpen(file)?.why ?? '', /20480 bytes but its pages need at least 40960: it was cut short/);
});

test('the pages cut off are all in the WAL: nothing lost, not cut; one of them only in the file: cut', async (t) => {
  const file = await fileIn(t);
  await dbFile(file, 5, 10);
  await walFile(file, commit(6, 10, 10));
  assert.equal(cutBeforeOpen(file), null);
  await walFile(file, commit(7, 10, 10));
  assert.match(cutBeforeOpen(file)?.why ?? '', /need at least 24576/);
});

test('frames after the last commit, or of an earlier generation (other salts), do not count as in the WAL', async (t) => {
  const file = await fileIn(t);
  await dbFile(file, 5, 10);
  // Page 6's frame is in a transaction never committed (a kill -9 mid-commit): SQLite ignores it.
  await walFile(file, [...commit(7, 10, 10), { page: 6, commit: 0 }]);
  assert.match(cutBeforeOpen(file)?.why ?? '', /need at least 24576/);
  // Page 6's frame is left from before the WAL's last reset: SQLite stops reading at it.
  await walFile(file, [...commit(7, 10, 10), ...commit(6, 6, 10, OLD_SALTS)]);
  assert.match(cutBeforeOpen(file)?.why ?? '', /need at least 24576/);
});

test('a commit whose checksum fails (a torn write, a copy taken mid-write) and what follows it do not count; a WAL whose header fails counts for nothing', async (t) => {
  const file = await fileIn(t);
  await dbFile(file, 5, 10);
  await walFile(file, [...commit(7, 10, 10), { page: 6, commit: 10, torn: true }]);
  assert.match(cutBeforeOpen(file)?.why ?? '', /need at least 24576/);
  await walFile(file, [...commit(7, 10, 10), { page: 5, commit: 0, torn: true }, { page: 6, commit: 10 }]);
  assert.match(cutBeforeOpen(file)?.why ?? '', /need at least 24576/, 'frames after a torn one do not count, even with a good checksum of their own');
  await walFile(file, commit(6, 10, 10));
  assert.equal(cutBeforeOpen(file), null, 'the same pages, checksums whole');
  await walFile(file, commit(6, 10, 10), false, true);
  assert.equal(cutBeforeOpen(file), null, 'checksums of big-endian words (a WAL written on such a machine)');
  await walFile(file, [...commit(7, 10, 10), { page: 6, commit: 10, torn: true }], false, true);
  assert.match(cutBeforeOpen(file)?.why ?? '', /need at least 24576/);
  await walFile(file, commit(6, 10, 10), true);
  assert.match(cutBeforeOpen(file)?.why ?? '', /need at least 40960/);
});

test("the database's size is the WAL's last commit's: a file that shrank there (incremental vacuum) is not cut where its header counts more", async (t) => {
  const file = await fileIn(t);
  // The header (last checkpointed) counts 10 pages; the WAL's last commit left 6 (vacuumed); the file
  // holds 7: every page the database has is there.
  await dbFile(file, 7, 10);
  await walFile(file, [...commit(2, 3, 10), ...commit(1, 2, 6)]);
  assert.equal(cutBeforeOpen(file), null);
  // And a file that grew in the WAL needs what the WAL's commit says, not the header's count.
  await walFile(file, commit(1, 1, 9));
  assert.match(cutBeforeOpen(file)?.why ?? '', /need at least 36864/);
});

test('an empty file whose WAL holds commits is cut (SQLite would delete the WAL at open); an empty file alone is new', async (t) => {
  const file = await fileIn(t);
  await writeFile(file, '');
  assert.equal(cutBeforeOpen(file), null);
  await walFile(file, commit(1, 4, 4));
  const cut = cutBeforeOpen(file);
  assert.match(cut?.why ?? '', /empty but its WAL holds commits of 4 pages/);
  assert.equal(cut?.walDatabaseBytes, 4 * PAGE);
});

test("a destroyed header: with a WAL's commits the sizes are the WAL's (cut found); with none, left to SQLite's refusal", async (t) => {
  const file = await fileIn(t);
  await dbFile(file, 5, 10);
  const fh = await open(file, 'r+');
  await fh.write(Buffer.alloc(100, 0x42), 0, 100, 0);
  await fh.close();
  assert.equal(cutBeforeOpen(file), null, 'not a database: SQLite says so');
  await walFile(file, commit(7, 10, 10));
  assert.match(cutBeforeOpen(file)?.why ?? '', /need at least 24576/);
  await walFile(file, [...commit(1, 1, 10), ...commit(6, 10, 10)]);
  assert.equal(cutBeforeOpen(file), null, 'page 1 and every page cut off are in the WAL');
});

test('the page holding the lock byte at 1 GiB is in neither the file nor the WAL: a database past it is not cut', async (t) => {
  const file = await fileIn(t);
  const lockPage = 0x40000000 / PAGE + 1;
  // The file ends just before the lock byte's page (checkpointed up to there); pages past it in the WAL.
  await dbFile(file, lockPage - 1);
  await walFile(file, commit(lockPage + 1, lockPage + 3, lockPage + 3));
  assert.equal(cutBeforeOpen(file), null);
  await walFile(file, commit(lockPage + 2, lockPage + 3, lockPage + 3));
  assert.match(cutBeforeOpen(file)?.why ?? '', /it was cut short/, 'the page after it, only in the file, is missing');
});
