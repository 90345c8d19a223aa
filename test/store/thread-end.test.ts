// The store's threads (history.db's worker, the journal's compactions) leave only when the store's thread
// terminates them, never by themselves: on Node 20 a thread that exits by itself can wait for good in
// NodePlatform::DrainTasks, and every thread ending after it too (platform/worker-thread.ts; CI's
// cold-history case hung on it at the close after a damaged read). Real threads, real files.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { runCompactionWorker } from '../../src/store/compaction';
import { HISTORY_FILE_NAME } from '../../src/store/index';
import { HistoryStore } from '../../src/store/history/history-store';
import { startHistoryWorker } from '../../src/store/history/start-worker';
import { startWorkerThread } from '../../src/platform/worker-thread';
import { tempDir } from '../helpers/temp';
import { watchEnd } from '../helpers/thread-end';

const STORE_SRC = path.join(__dirname, '../../src/store');

test("history.db's worker, closed, waits to be terminated; so does one whose open was refused", async (t) => {
  const temp = await tempDir('ra-thread-end-');
  t.after(temp.cleanup);
  const worker = startHistoryWorker();
  const { store } = await HistoryStore.boot(worker).open(temp.dir);
  assert.deepEqual(await store.put([{ conversation_id: 'c', role: 'user', content: 'kept', data: null }]), [1]);
  const ended = watchEnd(worker);
  await store.close();
  assert.deepEqual(await ended, { code: 1, byItself: false });

  // Not a database: the open is refused, and its worker ended by the opener.
  const refused = path.join(temp.dir, 'refused');
  await mkdir(refused);
  await writeFile(path.join(refused, HISTORY_FILE_NAME), 'not a database at all'.repeat(300));
  const refusedWorker = startHistoryWorker();
  const refusedEnd = watchEnd(refusedWorker);
  await assert.rejects(HistoryStore.boot(refusedWorker).open(refused), /not a database/);
  assert.deepEqual(await refusedEnd, { code: 1, byItself: false });
});

test('a compaction thread that answered waits to be terminated, and runCompactionWorker ends it', async (t) => {
  const temp = await tempDir('ra-thread-end-compact-');
  t.after(temp.cleanup);
  // A segment that is not there: the compaction answers with its failure.
  const job = { dir: temp.dir, fileName: 'service.db', segments: [path.join(temp.dir, 'journal-missing.seg')] };
  const worker = startWorkerThread('compact-worker', STORE_SRC, job);
  const answered = new Promise<{ ok: boolean }>((resolve) => worker.once('message', resolve));
  const ended = watchEnd(worker);
  assert.equal((await answered).ok, false);
  void worker.terminate();
  assert.deepEqual(await ended, { code: 1, byItself: false });
  // The store's own call: answered, then ended (it would wait for good for a thread that stays).
  await assert.rejects(runCompactionWorker(job), /compaction failed/);
});
