// Does storing bytes already on the machine tell another person they are there? (s36, dedup36.) Blobs are
// stored by content, and a put of bytes already stored returned at once: bob's attachment_end of bytes ada
// had uploaded answered in 1.1 ms, of new bytes in 3.0 ms (4 KiB; bench/dedup-timing.ts), so bob could
// confirm that a file he guesses is on the machine (the known attack on cross-user deduplication). Now an
// upload writes its blob as if new every time (temp file, fsync, rename, the folder's fsync): the same
// durable work, counted here with the file system's own calls, not timed. Real sockets, a real data directory.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { BLOBS_DIR_NAME } from '../../src/store/blob-store';
import { downloadAttachment, sha256, uploadAttachment } from '../helpers/attachments';
import { datasyncGate } from '../helpers/datasync-gate';
import type { TestClient } from '../helpers/ws-client';
import { useTwoPeople } from '../helpers/two-people';

type Frame = Record<string, unknown>;
const { svc, ada, bob } = useTwoPeople();

const requestOf = (client: TestClient) => (frame: Frame) => client.request(frame);
const blobFile = (bytes: Buffer) => {
  const hash = sha256(bytes);
  return path.join(svc.dataDir, BLOBS_DIR_NAME, hash.slice(0, 2), hash);
};

/** Uploads and answers attachment_end's answer without its id (the rest is all the uploader learns). */
async function upload(client: TestClient, bytes: Buffer): Promise<{ id: string; answer: Frame }> {
  const done = await uploadAttachment(requestOf(client), bytes, 'guess.bin', 'application/octet-stream');
  assert.equal(done.status, 'ok', JSON.stringify(done));
  const { attachment_id, ...answer } = done.data as Frame;
  return { id: attachment_id as string, answer };
}

test('attack: uploading bytes another person stored does the durable work of new bytes (the same fsyncs, the file written anew) and answers alike', async (t) => {
  const syncs = await datasyncGate(t);
  const size = 64 * 1024;
  const adas = randomBytes(size);
  const stored = await upload(ada(), adas);
  const before = await stat(blobFile(adas));

  // In both orders, so that no first-time cost (a folder made, a cache warmed) falls on one side only.
  const counted = async (bytes: Buffer) => {
    const at = syncs.count();
    const done = await upload(bob(), bytes);
    return { ...done, syncs: syncs.count() - at };
  };
  const fresh1 = await counted(randomBytes(size));
  const known1 = await counted(adas);
  // Taken before another put: a later one may be given the freed inode number back.
  const rewritten = await stat(blobFile(adas));
  const known2 = await counted(adas);
  const fresh2 = await counted(randomBytes(size));

  assert.ok(fresh1.syncs >= 2, `a new blob is fsynced, and its folder (${fresh1.syncs} syncs)`);
  assert.deepEqual([known1.syncs, known2.syncs], [fresh1.syncs, fresh2.syncs], 'bytes another person stored cost the same syncs as new bytes');
  assert.notEqual(rewritten.ino, before.ino, 'the blob was written anew and renamed over the stored one');
  assert.equal(rewritten.size, size);
  for (const answer of [known1.answer, known2.answer, fresh2.answer]) assert.deepEqual(answer, fresh1.answer, 'the answers differ in their id only');

  // Both people's attachments read back whole: the rename over the stored blob lost nothing.
  assert.deepEqual(await downloadAttachment(requestOf(ada()), stored.id), adas);
  assert.deepEqual(await downloadAttachment(requestOf(bob()), known1.id), adas);
});
