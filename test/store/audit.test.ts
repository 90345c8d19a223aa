// The audit log in the store (src/store/audit.ts): entries chain by hash, retention drops the oldest and
// keeps the chain verifiable from its anchor, and a row edited, removed or cut from the end of the real
// database files is found by verify(). Real files in temp dirs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditHash, AUDIT_GENESIS_HASH, openStore, type NewAuditEntry, type Store } from '../../src/store';
import { tamperWithStore } from '../helpers/audit-tamper';
import { fullDiskFake } from '../helpers/full-disk-fake';
import { tempDir } from '../helpers/temp';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);
// Generous: each case opens the store three times, slow on a loaded machine.
const LIMIT = { timeout: 120_000 };

const entry = (n: number): NewAuditEntry => ({
  kind: 'config.changed',
  person: { kind: 'owner', name: 'access token' },
  place: { via: 'lan', address: '127.0.0.1' },
  summary: `Changed model (${n})`,
  detail: { fields: ['model'], n },
});

async function withStore(t: { after: (fn: () => Promise<void>) => void }, clock?: { now: number }) {
  const { dir, cleanup } = await tempDir('ra-audit-store-');
  t.after(cleanup);
  const open = () => openStore(dir, clock ? { now: () => clock.now } : {});
  return { dir, open };
}

async function appendN(store: Store, from: number, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await store.audit.append(entry(from + i));
}

test('entries are numbered 1, 2, 3... and each hash chains the one before it', LIMIT, async (t) => {
  const { open } = await withStore(t);
  const store = await open();
  try {
    await appendN(store, 1, 5);
    const { entries, next_before } = store.audit.list({ limit: 10 });
    assert.deepEqual(
      entries.map((e) => e.seq),
      [5, 4, 3, 2, 1],
      'newest first',
    );
    assert.equal(next_before, null);
    const oldestFirst = [...entries].reverse();
    let previous = AUDIT_GENESIS_HASH;
    for (const e of oldestFirst) {
      const { hash, ...body } = e;
      assert.equal(hash, auditHash(previous, body));
      previous = hash;
    }
    assert.deepEqual(await store.audit.verify(), { ok: true, entries: 5, first_bad_seq: null, reason: null });
    const page = store.audit.list({ limit: 2, before: 4 });
    assert.deepEqual(
      page.entries.map((e) => e.seq),
      [3, 2],
    );
    assert.equal(page.next_before, 2);
  } finally {
    await store.close();
  }
});

test('a row edited, removed, or cut from the end of the database files of a closed store is reported with its seq', LIMIT, async (t) => {
  const cases: { name: string; sql: string; params?: (string | number)[]; bad: number }[] = [
    { name: 'edited', sql: "UPDATE audit_log SET summary = 'Changed nothing' WHERE seq = ?", params: [3], bad: 3 },
    { name: 'detail edited', sql: `UPDATE audit_log SET detail = '{"fields":["model"],"n":99}' WHERE seq = ?`, params: [4], bad: 4 },
    { name: 'removed', sql: 'DELETE FROM audit_log WHERE seq = ?', params: [2], bad: 2 },
    { name: 'the first removed', sql: 'DELETE FROM audit_log WHERE seq = ?', params: [1], bad: 1 },
    { name: 'the last removed', sql: 'DELETE FROM audit_log WHERE seq = ?', params: [5], bad: 5 },
  ];
  for (const c of cases) {
    const { dir, open } = await withStore(t);
    const store = await open();
    await appendN(store, 1, 5);
    assert.equal((await store.audit.verify()).ok, true);
    await store.close();
    await tamperWithStore(dir, c.sql, c.params);
    const reopened = await open();
    try {
      const verdict = await reopened.audit.verify();
      assert.equal(verdict.ok, false, `${c.name}: not detected`);
      assert.equal(verdict.first_bad_seq, c.bad, `${c.name}: ${verdict.reason}`);
      assert.ok(verdict.reason);
    } finally {
      await reopened.close();
    }
  }
});

test('retention drops entries older than audit.max_days; the chain verifies from its anchor; new entries go on numbering', LIMIT, async (t) => {
  const clock = { now: T0 };
  const { open } = await withStore(t, clock);
  const store = await open();
  try {
    await appendN(store, 1, 3);
    clock.now = T0 + 50 * DAY;
    await appendN(store, 4, 2);
    clock.now = T0 + 100 * DAY;
    store.maintenance.setPolicy({ auditMaxDays: 90 });
    await store.maintenance.run();
    assert.deepEqual(
      store.audit.list({ limit: 10 }).entries.map((e) => e.seq),
      [5, 4],
      'the three entries of day 0 are gone, those of day 50 stay',
    );
    assert.deepEqual(await store.audit.verify(), { ok: true, entries: 2, first_bad_seq: null, reason: null });
    await appendN(store, 6, 1);
    assert.equal(store.audit.list({ limit: 1 }).entries[0].seq, 6);
    assert.equal((await store.audit.verify()).ok, true);
  } finally {
    await store.close();
  }
});

test('a verify() running while retention drops entries still verifies', LIMIT, async (t) => {
  const clock = { now: T0 };
  const { open } = await withStore(t, clock);
  const store = await open();
  try {
    // More than one page of the walk (250), so the walk yields and the pruning runs in between.
    await store.db.write((tx) => {
      for (let i = 1; i <= 4500; i++) store.audit.record(tx, entry(i));
    });
    clock.now = T0 + 100 * DAY;
    await store.audit.append(entry(4501));
    store.maintenance.setPolicy({ auditMaxDays: 90 });
    const [verdict] = await Promise.all([store.audit.verify(), store.maintenance.run()]);
    assert.equal(verdict.ok, true, verdict.reason ?? '');
    assert.deepEqual(await store.audit.verify(), { ok: true, entries: 1, first_bad_seq: null, reason: null });
  } finally {
    await store.close();
  }
});

test('an entry whose write a full disk refused is not told (audit.appended) before it is durable: told never, listed once written', LIMIT, async (t) => {
  const { open } = await withStore(t);
  const store = await open();
  t.after(() => store.close().catch(() => {}));
  const disk = await fullDiskFake(t);
  const told: string[] = [];
  store.audit.onAppended((e) => told.push(e.summary));
  disk.set('writes');
  await assert.rejects(store.audit.append(entry(1)), /disk full|ENOSPC/);
  // The refusal settled every wait of the batch; what would tell the entry has had its turn.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(told, [], 'nothing outward before durable');
  disk.set('none');
  await store.db.flush();
  assert.deepEqual(
    store.audit.list({ limit: 10 }).entries.map((e) => e.summary),
    ['Changed model (1)'],
  );
});
