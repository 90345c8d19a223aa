// A new journal segment's directory entry is made durable beside its first records' write and fdatasync
// rather than before them (a new data directory's start, issue 25), and a record is still acknowledged
// only once both are done: the entry's fsync is held here, and the append must wait for it; a failed
// one fails the append (never acknowledged) and is tried again by the next.
import assert from 'node:assert/strict';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Journal } from '../../src/store/journal';
import { nullLogger } from '../../src/log/logger';
import { settledSoon, tempDir, waitFor } from '../helpers/temp';

/** Holds every fsync of a directory (FileHandle.sync on a directory) until `release`, or fails them while `failing`. */
async function holdDirectorySyncs(dir: string) {
  const probe = await open(path.join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as FileHandle;
  await probe.close();
  const { sync } = proto;
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const state: { started: number; done: number; failing: false | 'EIO' | 'ENOSPC' } = { started: 0, done: 0, failing: false };
  proto.sync = async function (this: FileHandle) {
    if (!(await this.stat()).isDirectory()) return sync.call(this);
    state.started++;
    await released;
    if (state.failing) throw Object.assign(new Error(`${state.failing}: fsync`), { code: state.failing });
    await sync.call(this);
    state.done++;
  };
  return { state, release, restore: () => (proto.sync = sync) };
}

const OPTIONS = { fileName: 'service.db', segmentBytes: 1 << 20, logger: nullLogger, onSegmentClosed: () => undefined };

test("a new segment's first record is acknowledged only once the segment's directory entry is durable", async (t) => {
  const temp = await tempDir('ra-journal-entry-');
  t.after(temp.cleanup);
  const held = await holdDirectorySyncs(temp.dir);
  t.after(held.restore);

  // The open no longer waits for the directory's fsync.
  const journal = await Journal.open({ ...OPTIONS, dir: temp.dir }, { lastSeq: 0, closed: [], maxN: 0 });
  t.after(() => journal.close());
  await waitFor(() => held.state.started === 1, "the segment's directory fsync to be under way");
  const first = journal.append([['CREATE TABLE t (x)', null]]);
  assert.equal(await settledSoon(first), false, 'not acknowledged while the entry is not durable');
  assert.equal(journal.flushes, 0);

  held.release();
  await first;
  assert.equal(held.state.done, 1, 'acknowledged after the directory fsync ended');
  // Later records wait for no directory fsync.
  await journal.append([['INSERT INTO t VALUES (1)', null]]);
  assert.equal(held.state.started, 1);
});

test("a failed directory fsync fails the new segment's first record (not acknowledged)", async (t) => {
  const temp = await tempDir('ra-journal-entry-');
  t.after(temp.cleanup);
  const held = await holdDirectorySyncs(temp.dir);
  t.after(held.restore);
  held.state.failing = 'EIO';
  held.release();

  const journal = await Journal.open({ ...OPTIONS, dir: temp.dir }, { lastSeq: 0, closed: [], maxN: 0 });
  t.after(() => journal.close().catch(() => undefined));
  await assert.rejects(journal.append([['CREATE TABLE t (x)', null]]), /could not be written.*EIO/);
  assert.ok(journal.failed, 'the journal refuses later writes rather than acknowledge them unsafely');
});

test('an adopted segment (the last one a killed run left) has its directory entry made durable before its first record here is acknowledged', async (t) => {
  const temp = await tempDir('ra-journal-entry-');
  t.after(temp.cleanup);
  // A run made the segment and was killed (-9) before its directory's fsync ended: nothing says it did.
  const segment = path.join(temp.dir, 'service.db.journal.1');
  await (await open(segment, 'w')).close();
  const held = await holdDirectorySyncs(temp.dir);
  t.after(held.restore);

  const journal = await Journal.open({ ...OPTIONS, dir: temp.dir }, { lastSeq: 0, active: { n: 1, path: segment, size: 0, maxSeq: 0 }, closed: [], maxN: 1 });
  t.after(() => journal.close());
  const first = journal.append([['CREATE TABLE t (x)', null]]);
  await waitFor(() => held.state.started === 1, "the adopted segment's directory fsync to be under way");
  assert.equal(await settledSoon(first), false, 'not acknowledged while the entry may not be durable');
  held.release();
  await first;
  assert.equal(held.state.done, 1);
});

test('a directory fsync refused for a full disk is tried afresh by the first retry once there is space, not answered by a stale attempt', async (t) => {
  const temp = await tempDir('ra-journal-entry-');
  t.after(temp.cleanup);
  const held = await holdDirectorySyncs(temp.dir);
  t.after(held.restore);
  held.state.failing = 'ENOSPC';
  held.release();

  const journal = await Journal.open({ ...OPTIONS, dir: temp.dir }, { lastSeq: 0, closed: [], maxN: 0 });
  t.after(() => journal.close().catch(() => undefined));
  const first = journal.append([['CREATE TABLE t (x)', null]]);
  await assert.rejects(first, /disk full/);
  held.state.failing = false;
  // Space again: the first retry writes the record and makes its entry durable now.
  await journal.retry();
  assert.equal(journal.degraded, null);
  assert.ok(held.state.done >= 1, 'the directory fsync ran after the space came back');
});
