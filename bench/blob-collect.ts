// The blob collection's cost (s33, blobs33): a data directory with N blobs (default 10,000, 1 KiB each)
// and an attachment row for each of the kept ones; one collection with nothing to free, then one freeing
// half (their rows deleted first). Prints the wall time, the event loop's longest stall meanwhile
// (a 1 ms timer's lateness) and the time of the one synchronous stretch (the rows' read).
//   npx tsx bench/blob-collect.ts [blobs]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { blobReferences, referencedHashes } from '../src/store/blob-refs';
import { openStore } from '../src/store/index';

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 10_000);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ra-blob-collect-'));
  try {
    const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
    await store.conversations.create({ id: 'c', title: 'c', source: 'ws', created_at: new Date().toISOString() });
    const hashes: string[] = [];
    for (let i = 0; i < count; i += 500) {
      const refs = await Promise.all(Array.from({ length: Math.min(500, count - i) }, () => store.blobs.put(randomBytes(1024))));
      await store.db.write((tx) => {
        for (const { hash, size } of refs) {
          tx.run("INSERT INTO attachments (id, hash, name, mime, kind, size, uploader, created_at, conversation_id) VALUES (?, ?, 'a', 'text/plain', 'file', ?, 'owner', '2026-01-01', 'c')", [
            hash,
            hash,
            size,
          ]);
        }
      });
      hashes.push(...refs.map((r) => r.hash));
    }
    const refs = blobReferences(store.db);
    const measure = async (label: string) => {
      let last = performance.now();
      let worst = 0;
      const timer = setInterval(() => {
        const now = performance.now();
        worst = Math.max(worst, now - last);
        last = now;
      }, 1);
      const t0 = performance.now();
      const collected = await store.blobs.collect(refs);
      const ms = performance.now() - t0;
      clearInterval(timer);
      const s0 = performance.now();
      referencedHashes(store.db, hashes);
      const read = performance.now() - s0;
      console.log(`${label}: ${ms.toFixed(0)} ms, removed ${collected.removed}; longest stall ${worst.toFixed(1)} ms; the rows' read ${read.toFixed(1)} ms`);
    };
    await measure(`${count} blobs, all referred to`);
    await store.db.write((tx) => tx.run('DELETE FROM attachments WHERE rowid % 2 = 0'));
    await measure(`${count} blobs, half freed`);
    await store.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
