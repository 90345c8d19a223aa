// Review of s12/agent12a: a refused group put (G1) followed by a later group (G2) posted before G1's
// refusal came back: G2 succeeds in its own transaction, history.db's highest key passes G1's keys, and a
// restart's restoreJournaledBodies put back only journaled bodies above that key: G1's acknowledged body
// read as the placeholder. The refusal is made by a row SQLite cannot bind (what a full disk does to a
// large transaction); the worker's messages are held to set the order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HistoryStore } from '../../src/store/history/history-store';
import { startHistoryWorker } from '../../src/store/history/start-worker';
import { openStore, type NewMessage } from '../../src/store/index';
import { tempDir } from '../helpers/store-utils';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const message = (i: number, content: string): NewMessage => ({ id: `m${i}`, conversation_id: 'c', role: i % 2 === 0 ? 'user' : 'assistant', content, timestamp: new Date(1000 + i).toISOString() });

test('refused group then a later accepted group: the refused bodies survive a restart', async () => {
  const { dir, cleanup } = await tempDir('rev12a-');
  const worker = startHistoryWorker();
  const store = await openStore(dir, { boot: { history: HistoryStore.boot(worker) }, maintenanceIntervalMs: 3_600_000 });
  await store.conversations.create({ id: 'c', title: 't', source: 'ws', created_at: new Date(0).toISOString() });
  await sleep(300); // let start-up maintenance settle

  const post = worker.postMessage.bind(worker);
  let g1: any = null;
  let later: any[] = [];
  let poisoned = false;
  worker.postMessage = (m: any, transfer?: never) => {
    const isPut = m && m.request && m.request.op === 'put';
    if (isPut && m.request.bodies.some((b: any) => String(b.content).startsWith('REFUSE'))) {
      // What a full disk does to a large transaction, every time (no room for it): refused as a whole (here: a NOT NULL row in it).
      const bad = structuredClone(m);
      bad.request.bodies.unshift({ key: 2 ** 40, conversation_id: 'c', role: 'user', content: { not: 'bindable' }, data: null });
      if (!poisoned) {
        poisoned = true;
        g1 = bad;
        return;
      }
      post(bad);
      return;
    }
    if (g1) {
      later.push(m);
      if (isPut) {
        // The worker takes G1 alone and answers; this thread only sees the answer after G2 was posted.
        post(g1);
        g1 = null;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
        for (const x of later) post(x);
        later = [];
      }
      return;
    }
    post(m, transfer);
  };

  const big = 'REFUSE ' + 'r'.repeat(1100 * 1024); // >= GROUP_MAX_BYTES: posted at once
  await store.messages.append(message(0, big)); // acknowledged
  await store.messages.append(message(1, 'small reply')); // acknowledged; G2 goes after 50 ms
  await sleep(150);
  await store.history.answered();
  assert.equal((await store.messages.get('m0'))?.content, big, 'served from owed meanwhile');
  assert.ok(poisoned, 'the first group was refused');
  await assert.rejects(store.history.sync(), /wait to be written/);
  worker.postMessage = post;
  await store.close();

  const again = await openStore(dir);
  try {
    const m0 = await again.messages.get('m0');
    assert.equal(m0?.content.slice(0, 20), big.slice(0, 20), 'the acknowledged body m0 after a restart');
  } finally {
    await again.close();
    await cleanup();
  }
});
