import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { BlobDamagedError, BlobStore } from '../../src/store/blob-store';
import type { BlobReferences } from '../../src/store/blob-guard';
import { openStore } from '../../src/store/index';
import { datasyncGate } from '../helpers/datasync-gate';
import { spawnStoreChild, tempDir } from '../helpers/store-utils';

const sha256 = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(path.join(entry.parentPath ?? entry.path, entry.name));
  }
  return out;
}

test('a blob comes back byte for byte under the SHA-256 of its bytes, in a private file', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const blobs = await BlobStore.open(path.join(dir, 'blobs'));
  const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
  const ref = await blobs.put(bytes);
  assert.deepEqual(ref, { hash: sha256(bytes), size: bytes.length });
  assert.deepEqual(await blobs.get(ref.hash), bytes);
  assert.equal(await blobs.has(ref.hash), true);
  const file = path.join(dir, 'blobs', ref.hash.slice(0, 2), ref.hash);
  if (process.platform !== 'win32') assert.equal((await stat(file)).mode & 0o777, 0o600);
  const text = await blobs.put('héllo');
  assert.equal((await blobs.get(text.hash))?.toString('utf8'), 'héllo');
});

const noRows: BlobReferences = { unreferenced: async (hashes) => [...hashes], durable: async () => undefined };

test('the same content is stored once; a collection with no row referring to it removes it and a missing blob reads as undefined', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const blobs = await BlobStore.open(dir);
  const a = await blobs.put('same bytes');
  const b = await blobs.put(Buffer.from('same bytes'));
  assert.equal(a.hash, b.hash);
  assert.equal((await filesUnder(dir)).length, 1);
  const hashes: string[] = [];
  for await (const h of blobs.hashes()) hashes.push(h);
  assert.deepEqual(hashes, [a.hash]);
  assert.deepEqual(await blobs.collect(noRows, [a.hash]), { removed: 1, bytes: 10 });
  assert.deepEqual(await blobs.collect(noRows, [a.hash]), { removed: 0, bytes: 0 });
  assert.equal(await blobs.get(a.hash), undefined);
  assert.equal(await blobs.has(a.hash), false);
});

test('writeEvenIfStored: bytes already stored cost the syncs of new bytes (an upload, s36 dedup36); a plain put of them writes nothing', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const blobs = await BlobStore.open(dir);
  const syncs = await datasyncGate(t);
  const syncsOf = async (put: () => Promise<unknown>) => {
    const at = syncs.count();
    await put();
    return syncs.count() - at;
  };
  const evenIfStored = (bytes: string) => blobs.holding((put) => put(bytes), { writeEvenIfStored: true });
  const fresh = await syncsOf(() => evenIfStored('new bytes'));
  const known = await syncsOf(() => evenIfStored('new bytes'));
  assert.deepEqual([fresh, known], [2, 2], 'the file and its folder, both times');
  assert.equal(await syncsOf(() => blobs.put('new bytes')), 0, 'a turn’s put of stored bytes still writes nothing');
  assert.equal(await syncsOf(() => blobs.holding((put) => put('new bytes'))), 0);
  assert.deepEqual(await filesUnder(dir), [path.join(dir, sha256('new bytes').slice(0, 2), sha256('new bytes'))], 'one file, no temp left');
  assert.equal((await blobs.get(sha256('new bytes')))?.toString(), 'new bytes');
});

test('writeEvenIfStored: a rename over the stored bytes refused (Windows while a reader holds them; here an immutable file) still stores them', async (t) => {
  const { dir, cleanup } = await tempDir();
  const ref = sha256('kept bytes');
  const file = path.join(dir, ref.slice(0, 2), ref);
  const blobs = await BlobStore.open(dir);
  await blobs.put('kept bytes');
  // chattr +i: a rename over the file is refused with EPERM, as Windows refuses one over a file held open.
  const immutable = spawnSync('chattr', ['+i', file]);
  t.after(async () => {
    spawnSync('chattr', ['-i', file]);
    await cleanup();
  });
  if (immutable.status !== 0) return t.skip('chattr +i is not available here (needs root and a file system with the flag)');
  await assert.rejects(writeFile(file, 'other'), 'the file is immutable');
  const put = await blobs.holding((p) => p('kept bytes'), { writeEvenIfStored: true });
  assert.deepEqual(put, { hash: ref, size: 10 });
  assert.equal((await blobs.get(ref))?.toString(), 'kept bytes');
  assert.deepEqual(await filesUnder(dir), [file], 'no temp file left');
});

test('a damaged blob file is reported, never served', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const blobs = await BlobStore.open(dir);
  const ref = await blobs.put('the real content');
  const file = path.join(dir, ref.hash.slice(0, 2), ref.hash);
  await writeFile(file, 'the real conTent'); // same size, one flipped byte
  await assert.rejects(blobs.get(ref.hash), BlobDamagedError);
  await writeFile(file, 'the real'); // torn: cut short
  await assert.rejects(blobs.get(ref.hash), BlobDamagedError);
  // Putting the content again repairs a short file.
  await blobs.put('the real content');
  assert.equal((await blobs.get(ref.hash))?.toString(), 'the real content');
});

test('names that are not a blob hash are refused before touching the disk (no path out of the folder)', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  await writeFile(path.join(dir, 'secret'), 'outside');
  const blobs = await BlobStore.open(path.join(dir, 'blobs'));
  for (const bad of ['../secret', '..', '', 'A'.repeat(64), `${'a'.repeat(63)}/`, `${'a'.repeat(64)}\0`]) {
    await assert.rejects(blobs.get(bad), TypeError, bad);
    await assert.rejects(blobs.collect(noRows, [bad]), TypeError, bad);
    await assert.rejects(blobs.has(bad), TypeError, bad);
  }
  assert.equal(await readFile(path.join(dir, 'secret'), 'utf8'), 'outside');
});

test('kill -9 while blobs are being written: every acknowledged blob is whole, nothing half-written is served', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const child = spawnStoreChild('blobs', dir);
  t.after(() => child.proc.kill('SIGKILL'));
  await child.waitFor((lines) => lines.length >= 6); // "ready" + 5 acknowledged
  child.proc.kill('SIGKILL');
  await child.exited;
  const acknowledged = child.lines.slice(1).filter((l) => l.length > 0);
  const blobs = await BlobStore.open(dir);
  for (const hash of acknowledged) {
    const bytes = await blobs.get(hash);
    assert.ok(bytes, `acknowledged blob ${hash} is present`);
    assert.equal(sha256(bytes), hash);
  }
  // Whatever else is on disk is either a whole blob or nothing: the temp file of the put in flight was removed at open.
  for (const file of await filesUnder(dir)) {
    const name = path.basename(file);
    assert.equal(sha256(await readFile(file)), name, `${file} is a whole blob`);
  }
});

test('a temp file a crash left beside a blob is removed at open; the blob folder lists only whole blobs', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  let blobs = await BlobStore.open(dir);
  const ref = await blobs.put('kept');
  const other = sha256('never finished');
  const temp = path.join(dir, other.slice(0, 2), `.${other}.0123456789ab.tmp`);
  await mkdir(path.dirname(temp), { recursive: true });
  await writeFile(temp, 'never fin');
  blobs = await BlobStore.open(dir);
  await assert.rejects(stat(temp), /ENOENT/);
  const hashes: string[] = [];
  for await (const h of blobs.hashes()) hashes.push(h);
  assert.deepEqual(hashes, [ref.hash]);
});

test('the store opens its blob folder in the data directory', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  await mkdir(dir, { recursive: true });
  const store = await openStore(dir);
  t.after(() => store.close());
  const ref = await store.blobs.put('through the store');
  assert.equal(await readFile(path.join(dir, 'blobs', ref.hash.slice(0, 2), ref.hash), 'utf8'), 'through the store');
});
