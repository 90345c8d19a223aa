// Deletions while chats waiting in line hold many attachments (s36, attack36): HELD ids held (default 40,000,
// as 4,000 waiting chats of ten files), K conversations (default 1,000) each carrying one held attachment,
// each deleted (trashConversation, as delete_conversation does), then the collection's orphan pass over the K
// held rows left. Prints the deletions' mean and worst wall time and the orphan pass's (the write holds the loop).
//   npx tsx bench/held-deletions.ts [held] [conversations]
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openStore } from '../src/store/index';
import { nullLogger } from '../src/log/logger';
import { trashConversation } from '../src/store/conversations';
import { collectBlobs } from '../src/store/blob-collection';

async function main() {
  const HELD = Number(process.argv[2] ?? 40_000);
  const K = Number(process.argv[3] ?? 1000);
  const dir = await mkdtemp(path.join(tmpdir(), 'held-bench-'));
  const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
  await store.maintenance.run();
  const at = new Date().toISOString();
  await store.db.write((tx) => {
    for (let i = 0; i < K; i++) {
      tx.run('INSERT INTO conversations (id, title, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [`c${i}`, 'c', 'ws', at, at]);
      tx.run("INSERT INTO attachments (id, hash, name, mime, kind, size, uploader, created_at, conversation_id) VALUES (?, 'h', 'a', 'text/plain', 'file', 1, 'ada', ?, ?)", [`a${i}`, at, `c${i}`]);
    }
  });
  const ids = [...Array.from({ length: HELD - K }, () => randomUUID()), ...Array.from({ length: K }, (_, i) => `a${i}`)];
  const release = store.attachments.holds.hold(ids);
  let worst = 0;
  let total = 0;
  for (let i = 0; i < K; i++) {
    const t = performance.now();
    await store.db.write((tx) => trashConversation(tx, `c${i}`, store.attachments.holds));
    const ms = performance.now() - t;
    total += ms;
    worst = Math.max(worst, ms);
  }
  console.log(`held ${HELD}, ${K} deletions: mean ${(total / K).toFixed(1)} ms, worst ${worst.toFixed(1)} ms`);
  const t = performance.now();
  await collectBlobs(store.db, store.blobs, nullLogger, store.attachments.holds);
  console.log(`orphan pass + collection over ${K} held conversations: ${(performance.now() - t).toFixed(0)} ms`);
  release();
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
void main();
