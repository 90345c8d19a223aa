// The blob collection's cost (s33, blobs33; s35, collect35): a data directory whose rows refer to N
// hashes (default 100,000: half of them attachments of a kept conversation, half the before/after images
// of its file changes, one file each in blobs/), and a conversation of 1,000 attachments that is deleted
// (trashConversation, as delete_conversation does). Then one collection after the deletion (frees its
// 1,000 blobs) and one with nothing to free. Prints each one's wall time, the event loop's longest stop
// meanwhile (a 1 ms timer's lateness) and the rows' read alone (its total time; sliced since s35).
// Rows and files are generated directly (no fsync per blob), so a large store is made in seconds.
//   npx tsx bench/blob-collect.ts [referenced hashes] [runs]
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { nullLogger } from '../src/log/logger';
import { collectBlobs } from '../src/store/blob-collection';
import { unreferencedHashes } from '../src/store/blob-refs';
import { BLOBS_DIR_NAME } from '../src/store/blob-store';
import { trashConversation } from '../src/store/conversations';
import type { WriteTx } from '../src/store/database';
import { openStore } from '../src/store/index';

const GONE = 1_000;

/** N distinct hashes, each with a small file in blobs/ (written as the store would name it, without fsync). */
async function makeBlobs(dir: string, count: number): Promise<string[]> {
  const hashes: string[] = [];
  for (let i = 0; i < count; i += 256) {
    await Promise.all(
      Array.from({ length: Math.min(256, count - i) }, async () => {
        const bytes = randomBytes(64);
        const hash = createHash('sha256').update(bytes).digest('hex');
        await mkdir(path.join(dir, hash.slice(0, 2)), { recursive: true });
        await writeFile(path.join(dir, hash.slice(0, 2), hash), bytes);
        hashes.push(hash);
      }),
    );
  }
  return hashes;
}

async function once(count: number): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ra-blob-collect-'));
  try {
    const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
    await store.maintenance.run(); // the first pass's collection over before the store is filled
    const at = new Date().toISOString();
    for (const id of ['kept', 'gone']) await store.conversations.create({ id, title: id, source: 'ws', created_at: at });
    const made = performance.now();
    const kept = await makeBlobs(path.join(dir, BLOBS_DIR_NAME), count);
    const gone = await makeBlobs(path.join(dir, BLOBS_DIR_NAME), GONE);
    const attach = (tx: WriteTx, hash: string, conversation: string) =>
      tx.run("INSERT INTO attachments (id, hash, name, mime, kind, size, uploader, created_at, conversation_id) VALUES (?, ?, 'a', 'text/plain', 'file', 64, 'owner', ?, ?)", [
        `${conversation}-${hash}`,
        hash,
        at,
        conversation,
      ]);
    await store.db.write((tx) => {
      const half = Math.floor(count / 2);
      for (const hash of kept.slice(0, half)) attach(tx, hash, 'kept');
      for (let i = half; i < count; i += 2) {
        tx.run(
          "INSERT INTO file_changes (id, conversation_id, turn_id, kind, tool, root, path, before_hash, after_hash, state, created_at) VALUES (?, 'kept', 't', 'file', 'write_file', '/r', ?, ?, ?, 'done', ?)",
          [`f${i}`, `p${i}`, kept[i], kept[i + 1] ?? null, at],
        );
      }
      for (const hash of gone) attach(tx, hash, 'gone');
    });
    console.log(`  made ${count} referenced + ${GONE} to free in ${((performance.now() - made) / 1000).toFixed(1)} s`);
    const measure = async (label: string) => {
      let last = performance.now();
      let worst = 0;
      const timer = setInterval(() => {
        const now = performance.now();
        worst = Math.max(worst, now - last);
        last = now;
      }, 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      worst = 0;
      const t0 = performance.now();
      const collected = await collectBlobs(store.db, store.blobs, nullLogger);
      const ms = performance.now() - t0;
      await new Promise((resolve) => setTimeout(resolve, 5));
      clearInterval(timer);
      const s0 = performance.now();
      await unreferencedHashes(store.db, kept);
      const read = performance.now() - s0;
      console.log(`  ${label}: ${ms.toFixed(0)} ms, removed ${collected.removed}; longest stop ${worst.toFixed(1)} ms; the rows' read ${read.toFixed(1)} ms`);
    };
    await store.db.write((tx) => trashConversation(tx, 'gone'));
    await measure(`${count} referenced, a conversation of ${GONE} deleted`);
    await measure(`${count} referenced, nothing to free`);
    await store.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 100_000);
  const runs = Number(process.argv[3] ?? 1);
  for (let i = 0; i < runs; i += 1) await once(count);
}

void main();
