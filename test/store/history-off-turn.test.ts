// The history worker off the turn's path (docs/design.md, "The history worker off the turn's path"): a
// message's append waits for its journal commit, not for the worker's write of its body; reads still
// meet every body (the worker answers in order); and a worker that does not keep up makes appends wait
// once MAX_UNWRITTEN_BYTES are held for it. The worker here is the real one on real files, its inbox
// held shut by the test (`gate`), as a worker busy with a long request would hold it.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { HistoryStore, MAX_UNWRITTEN_BYTES } from '../../src/store/history/history-store';
import { startHistoryWorker } from '../../src/store/history/start-worker';
import { openStore, type NewMessage, type Store } from '../../src/store/index';
import { tempDir } from '../helpers/store-utils';

/** Holds every request posted to the worker (in order) while shut; `open` passes them on. */
function gate(worker: Worker): { shut: () => void; open: () => void } {
  const post = worker.postMessage.bind(worker);
  let held: unknown[] | null = null;
  worker.postMessage = (message: unknown, transfer?: never) => {
    if (held && typeof message === 'object' && message !== null && 'id' in message) held.push(message);
    else post(message, transfer);
  };
  return {
    shut: () => void (held ??= []),
    open: () => {
      const waiting = held ?? [];
      held = null;
      for (const message of waiting) post(message);
    },
  };
}

async function gatedStore(t: TestContext): Promise<{ dir: string; store: Store; shut: () => void; open: () => void }> {
  const { dir, cleanup } = await tempDir('history-off-turn-');
  const worker = startHistoryWorker();
  const worker_gate = gate(worker);
  const store = await openStore(dir, { boot: { history: HistoryStore.boot(worker) } });
  t.after(async () => {
    worker_gate.open();
    await store.close().catch(() => {});
    await cleanup();
  });
  await store.conversations.create({ id: 'c', title: 't', source: 'ws', created_at: new Date(0).toISOString() });
  return { dir, store, ...worker_gate };
}

const message = (i: number, content: string): NewMessage => ({ id: `m${i}`, conversation_id: 'c', role: i % 2 === 0 ? 'user' : 'assistant', content, timestamp: new Date(1000 + i).toISOString() });

test('an append is acknowledged once journaled, the worker not yet having its body; reads then meet every body, and a reopened store has them', async (t) => {
  const { dir, store, shut, open } = await gatedStore(t);
  shut();
  // Bodies large enough to leave the recent bodies' cache (4 MiB): the read has to ask the worker.
  const big = (i: number) => `${i} ${'b'.repeat(1024 * 1024)}`;
  for (let i = 0; i < 6; i++) await store.messages.append(message(i, big(i)));
  const read = store.messages.recent('c', { limit: 10 });
  open();
  assert.deepEqual(
    (await read).map((m) => m.content),
    [0, 1, 2, 3, 4, 5].map(big),
  );
  await store.close();
  const again = await openStore(dir);
  try {
    assert.deepEqual(
      (await again.messages.recent('c', { limit: 10 })).map((m) => m.content),
      [0, 1, 2, 3, 4, 5].map(big),
    );
  } finally {
    await again.close();
  }
});

test('a worker that does not keep up: past MAX_UNWRITTEN_BYTES held for it, an append waits for its body to be written', async (t) => {
  const { store, shut, open } = await gatedStore(t);
  shut();
  const chunk = 1024 * 1024;
  const fit = Math.floor(MAX_UNWRITTEN_BYTES / chunk);
  for (let i = 0; i < fit; i++) await store.messages.append(message(i, 'x'.repeat(chunk)));
  let done = false;
  const past = store.messages.append(message(fit, 'y'.repeat(chunk))).then(() => void (done = true));
  // A later commit's durability follows the one before it (the journal writes in order): the message
  // past the cap is durable and applied by then, and still not acknowledged.
  await store.meta.set('probe', '1');
  assert.equal(store.messages.has(`m${fit}`), true);
  assert.equal(done, false, 'the append past the cap waits for the worker');
  open();
  await past;
  assert.equal((await store.messages.get(`m${fit}`))?.content, 'y'.repeat(chunk));
});
