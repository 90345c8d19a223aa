// A message appended while the journal still owes a full disk's records (review20a): its write waits for
// them (Database.write's road), and its seq must be given as it is applied, not before, or a message
// appended meanwhile takes the same seq (a UNIQUE refusal) or a higher one applied first (a reader of the
// rows after the last seq it saw misses it).
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { openStore } from '../../src/store/index';
import type { NewMessage } from '../../src/store/types';
import { fullDiskFake } from '../helpers/full-disk-fake';
import { datasyncGate } from '../helpers/datasync-gate';
import { tempDir } from '../helpers/store-utils';

const iso = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
const message = (id: string, n: number, c = 'c1'): NewMessage => ({ id, conversation_id: c, role: 'user', content: `text ${id}`, timestamp: iso(n) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A store with conversations `ids` whose journal owes a refused message (mA), space back, and message mB
 * appended behind it while the retry's fdatasync is held (`gate.release()` lets it go).
 */
async function appendBehindOwed(t: TestContext, ids: string[]) {
  const { dir, cleanup } = await tempDir('r20a-');
  t.after(cleanup);
  const fake = await fullDiskFake(t);
  const gate = await datasyncGate(t);
  const store = await openStore(dir);
  t.after(() => store.close().catch(() => undefined));
  for (const id of ids) await store.conversations.create({ id, title: 't', source: 'lan', created_at: iso(0) });
  await store.messages.append(message('m0', 1));
  fake.set('writes');
  await assert.rejects(store.messages.append(message('mA', 2)), /ENOSPC/);
  fake.set('none');
  gate.hold();
  const pB = store.messages.append(message('mB', 3));
  await sleep(100); // the retry wrote the owed record; its fdatasync is held
  return { store, gate, pB };
}

test('after a full disk: a seq given before the retry is given again after a write naming messages', { timeout: 60_000 }, async (t) => {
  const { store, gate, pB } = await appendBehindOwed(t, ['c1', 'c2']);
  // another client deletes a conversation (a statement naming messages)
  const del = store.conversations.delete('c2');
  const pC = store.messages.append(message('mC', 4));
  gate.release();
  const results = await Promise.allSettled([pB, pC, del]);
  assert.deepEqual(
    results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'ok')),
    ['ok', 'ok', 'ok'],
  );
});

test('after a full disk: a message given its seq before the retry is inserted after a later one', { timeout: 60_000 }, async (t) => {
  const { store, gate, pB } = await appendBehindOwed(t, ['c1']);
  const pC = store.messages.append(message('mC', 4));
  const seen = (await store.messages.after('c1', 0)).map((r) => `${r.id}:${r.seq}`);
  gate.release();
  await Promise.all([pB, pC]);
  const all = (await store.messages.after('c1', 0)).map((r) => `${r.id}:${r.seq}`);
  const lastSeen = Math.max(...seen.map((s) => Number(s.split(':')[1])));
  const later = (await store.messages.after('c1', lastSeen)).map((r) => r.id);
  // A reader that had everything up to lastSeen, asking for what came after, must get mB.
  assert.ok(all.length === seen.length + later.length, `reader missed rows: seen ${seen} then ${later}, final ${all}`);
});
