// One durable commit per acknowledged message (issue 25): the fsyncs behind each acknowledgement are
// counted where they happen, the journal's on this thread (FileHandle.sync/datasync) and history.db's
// in its worker (its file layer's fsyncSync calls: HistoryStats.syncs).
import assert from 'node:assert/strict';
import { copyFile, open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { HISTORY_FILE_NAME, openStore } from '../../src/store/index';
import type { NewMessage, Store } from '../../src/store/index';
import { captureLogger, tempDir } from '../helpers/store-utils';
import { admittedWebhookMessage } from '../helpers/webhook-rows';

const LIMIT = { timeout: 60_000 };
const iso = (ms: number) => new Date(Date.UTC(2024, 0, 1) + ms).toISOString();

/** Counts every FileHandle sync/datasync of this thread from now on; `stop` puts the originals back. */
async function countHandleSyncs(dir: string): Promise<{ count: () => number; stop: () => void }> {
  const probe = await open(path.join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as FileHandle;
  await probe.close();
  const { sync, datasync } = proto;
  let n = 0;
  proto.sync = function (this: FileHandle) {
    n++;
    return sync.call(this);
  };
  proto.datasync = function (this: FileHandle) {
    n++;
    return datasync.call(this);
  };
  return {
    count: () => n,
    stop: () => {
      proto.sync = sync;
      proto.datasync = datasync;
    },
  };
}

/** fsyncs made by both threads so far. */
async function syncsSoFar(store: Store, handles: { count: () => number }): Promise<number> {
  return handles.count() + (await store.history.stats()).syncs;
}

function message(i: number, role: NewMessage['role'] = 'user'): NewMessage {
  return { id: `m${i}`, conversation_id: 'c', role, content: `message ${i} ${'x'.repeat(i * 97)}`, timestamp: iso(i) };
}

test('an acknowledged message costs one durable commit (fsync), and a tick of concurrent turns shares one', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('durable-commits-');
  t.after(cleanup);
  let store = await openStore(dir);
  t.after(() => store.close());
  await store.conversations.create({ id: 'c', title: 'c', source: 'ws', created_at: iso(0) });
  await store.maintenance.run();
  await store.db.flush();
  const handles = await countHandleSyncs(dir);
  t.after(handles.stop);

  // One after another, each awaited (a user message, then a turn's messages stored together).
  const perMessage: number[] = [];
  for (let i = 1; i <= 6; i++) {
    const before = await syncsSoFar(store, handles);
    if (i % 2 === 1) await store.messages.append(message(i));
    else await store.messages.appendMany([message(i * 100, 'tool'), message(i * 100 + 1, 'assistant')]);
    perMessage.push((await syncsSoFar(store, handles)) - before);
  }
  assert.deepEqual(perMessage, [1, 1, 1, 1, 1, 1], 'fsyncs per acknowledged write');

  // Twenty turns of one tick: one commit for all of them.
  const before = await syncsSoFar(store, handles);
  await Promise.all(Array.from({ length: 20 }, (_, i) => store.messages.append(message(1000 + i))));
  assert.equal((await syncsSoFar(store, handles)) - before, 1, 'fsyncs for 20 concurrent messages');
  handles.stop();

  await store.close();
  store = await openStore(dir);
  const rows = await store.messages.recent('c', { limit: 100, includeTools: true });
  assert.equal(rows.length, 29);
  assert.equal(rows.find((m) => m.id === 'm1001')?.content, message(1001).content);
});

/** history.db and its WAL as they are now (the worker is idle: nothing is being written). */
async function copyHistory(dir: string, to: string): Promise<void> {
  for (const name of [HISTORY_FILE_NAME, `${HISTORY_FILE_NAME}-wal`]) await copyFile(path.join(dir, name), path.join(to, name));
}

/** Puts the copy back, as a power loss leaves history.db: without what was written since its last fsync. */
async function putHistoryBack(from: string, dir: string): Promise<void> {
  for (const name of [HISTORY_FILE_NAME, `${HISTORY_FILE_NAME}-wal`]) await copyFile(path.join(from, name), path.join(dir, name));
}

test('history.db loses what it wrote since its last fsync (a power loss): the journal puts those bodies back, a deleted message\u2019s body stays deleted', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('durable-commits-');
  t.after(cleanup);
  const { dir: saved, cleanup: cleanSaved } = await tempDir('durable-commits-copy-');
  t.after(cleanSaved);
  const { logger, lines } = captureLogger();
  let store = await openStore(dir, { logger });
  t.after(() => store.close());
  await store.conversations.create({ id: 'c', title: 'c', source: 'ws', created_at: iso(0) });
  await store.conversations.create({ id: 'gone', title: 'gone', source: 'ws', created_at: iso(0) });
  await store.messages.append(message(1));
  await store.history.sync();
  await copyHistory(dir, saved);

  // Acknowledged after history.db's last fsync: durable in the journal only.
  for (let i = 2; i <= 5; i++) await store.messages.append(message(i));
  await store.messages.append({ ...message(99), conversation_id: 'gone', content: 'secret to be deleted' });
  const deletedKey = store.db.get<{ k: number }>('SELECT body_key AS k FROM messages WHERE id = ?', ['m99'])!.k;
  await store.conversations.delete('gone');
  await store.maintenance.run();
  await store.close();
  await putHistoryBack(saved, dir);

  store = await openStore(dir, { logger });
  assert.deepEqual(
    (await store.messages.recent('c', { limit: 100 })).map((m) => m.content),
    [1, 2, 3, 4, 5].map((i) => message(i).content),
  );
  assert.equal(await store.problem(), null);
  const { maxKey } = await store.history.stats();
  const bodies = await store.history.get(await store.history.keysBetween(1, maxKey));
  assert.equal(
    [...bodies.values()].some((b) => b.content.includes('secret')),
    false,
    'the deleted message\u2019s body is not put back',
  );
  assert.ok(lines.some((l) => l.event === 'history.bodies_restored'));
  assert.equal(
    lines.some((l) => l.level === 'error'),
    false,
    JSON.stringify(lines.filter((l) => l.level === 'error')),
  );

  // New bodies get keys above every journaled one; after a compaction (history.db synced first) they all stay.
  await store.messages.append(message(6));
  const newKey = store.db.get<{ k: number }>('SELECT body_key AS k FROM messages WHERE id = ?', ['m6'])!.k;
  assert.ok(newKey > deletedKey, `a key is never given twice (${newKey} after ${deletedKey}, the deleted message's, lost with history.db's tail)`);
  await store.db.compact();
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(
    (await store.messages.recent('c', { limit: 100 })).map((m) => m.content),
    [1, 2, 3, 4, 5, 6].map((i) => message(i).content),
  );
});

test('opening a new data directory makes few fsyncs: the meta table and the schema ride in one journal record, a new history.db is made aside and renamed in', LIMIT, async (t) => {
  const probe = await tempDir('durable-commits-probe-');
  t.after(probe.cleanup);
  const handles = await countHandleSyncs(probe.dir);
  t.after(handles.stop);
  const { dir, cleanup } = await tempDir('durable-commits-');
  t.after(cleanup);
  const store = await openStore(dir);
  t.after(() => store.close());
  const main = handles.count();
  const worker = (await store.history.stats()).syncs;
  // Before: 5 and 10 (the meta table was a journal record of its own; a new history.db was turned to
  // WAL in place, a rollback journal's commits, before its tables were made); then 4 and 4 (service.lock
  // fsynced; the new WAL's header, the open's commit and the sync after it, each fsynced). Now: the
  // journal's directory entry and record, history.db's directory entries; the new file, the WAL once.
  assert.ok(main <= 3, `${main} fsyncs on the service's thread`);
  assert.ok(worker <= 2, `${worker} fsyncs in history.db's worker`);
});

test('a pending webhook delivery\u2019s body lost with history.db\u2019s unsynced tail is put back from the journal, byte for byte', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('durable-commits-');
  t.after(cleanup);
  const { dir: saved, cleanup: cleanSaved } = await tempDir('durable-commits-copy-');
  t.after(cleanSaved);
  let store = await openStore(dir);
  t.after(() => store.close());
  const now = Date.now();
  await admittedWebhookMessage(store, { account: 'a', conversation: 'c', message: 'm' }, now);
  await store.history.sync();
  await copyHistory(dir, saved);

  // Acknowledged after history.db's last fsync: the reply's delivery and its body, durable in the journal only.
  const body = JSON.stringify({ message: `the reply \u00e9 ${'r'.repeat(5_000)}`, conversation_id: 'c' });
  const reply: NewMessage = { id: 'r', conversation_id: 'c', role: 'assistant', content: 'the reply', timestamp: new Date(now).toISOString() };
  await store.webhooks.answer('m', reply, { id: 'd', account: 'a', url: 'http://127.0.0.1:9/out', body, now, give_up_ms: now + 60_000 });
  await store.close();
  await putHistoryBack(saved, dir);

  store = await openStore(dir);
  await store.maintenance.run();
  assert.equal(await store.webhooks.deliveryBody(store.webhooks.getDelivery('d')!), body);
});
