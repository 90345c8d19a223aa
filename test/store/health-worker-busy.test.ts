// Review of s12/agent12a: store.problem() (GET /health, which answers at once: docs/protocol.md) while the
// history worker is busy or stuck with an earlier request: it waited for the worker without a bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HistoryStore } from '../../src/store/history/history-store';
import { startHistoryWorker } from '../../src/store/history/start-worker';
import { openStore } from '../../src/store/index';
import { tempDir } from '../helpers/store-utils';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('problem() answers while the worker has not answered a put', async () => {
  const { dir, cleanup } = await tempDir('rev12a-');
  const worker = startHistoryWorker();
  const store = await openStore(dir, { boot: { history: HistoryStore.boot(worker) }, maintenanceIntervalMs: 3_600_000 });
  await store.conversations.create({ id: 'c', title: 't', source: 'ws', created_at: new Date(0).toISOString() });
  await sleep(300);
  assert.equal(await store.problem(), null);
  const post = worker.postMessage.bind(worker);
  const held: any[] = [];
  worker.postMessage = (m: any) => void held.push(m); // a worker stuck in a long request (a backup's copy, a vacuum step, a hung fsync)
  await store.messages.append({ id: 'm0', conversation_id: 'c', role: 'user', content: 'hi', timestamp: new Date(1).toISOString() });
  const answer = await Promise.race([store.problem().then((p) => `answered ${p}`), sleep(3000).then(() => 'no answer in 3 s')]);
  worker.postMessage = post;
  for (const m of held) post(m);
  await store.close();
  await cleanup();
  assert.match(answer, /^answered/);
});
