import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFile, chmod, copyFile, mkdir, readdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Database, MIGRATIONS, openStore, schemaVersion } from '../../src/store/index';
import type { Store } from '../../src/store/index';
import { encodeRecord, scanRecords } from '../../src/store/record';
import { listSegments } from '../../src/store/replay';
import { loadSqlJs } from '../../src/store/sqljs';
import { fromBase64url, generateKeyPair } from '../../src/tunnel';
import { captureLogger, spawnStoreChild, tempDir } from '../helpers/store-utils';

const T0 = Date.UTC(2024, 0, 1);
/** Every test is bounded in time. */
const LIMIT = { timeout: 30_000 };
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();

async function withDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  return dir;
}

async function segments(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => /^service\.db\.journal\.\d+$/.test(n)).sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
}

async function lastSegment(dir: string): Promise<string> {
  const all = await segments(dir);
  assert.ok(all.length > 0, 'expected a journal segment');
  return path.join(dir, all[all.length - 1]);
}

async function seedConversation(store: Store, id = 'c1', messages = 3): Promise<void> {
  await store.conversations.create({ id, title: `title ${id}`, source: 'ws', created_at: iso(0) });
  for (let i = 0; i < messages; i++) {
    await store.messages.append({
      id: `${id}-m${i}`,
      conversation_id: id,
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: `hello ${i}`,
      timestamp: iso(1000 * (i + 1)),
    });
  }
}

const ids = async (store: Store, conversation = 'c1') => (await store.messages.recent(conversation, { limit: 1000, includeTools: true })).map((m) => m.id);

test('writes survive a reopen through journal replay alone (no snapshot)', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await seedConversation(store, 'c1', 3);
  await store.db.write((tx) => {
    tx.run('CREATE TABLE blobs (k TEXT PRIMARY KEY, v BLOB, r REAL, b INTEGER)');
    tx.run('INSERT INTO blobs VALUES (?, ?, ?, ?)', ['k', new Uint8Array([0, 1, 254, 255, 10]), 1.5e-7, true]);
  });
  await store.meta.set('greeting', 'line\nbreak "quoted" ✓');
  await store.close();
  assert.equal((await readdir(dir)).includes('service.db'), false, 'no snapshot was written');
  assert.equal((await readdir(dir)).includes('service.lock'), false, 'lock released on close');

  store = await openStore(dir);
  t.after(() => store.close());
  assert.deepEqual(await ids(store), ['c1-m0', 'c1-m1', 'c1-m2']);
  assert.equal(store.conversations.get('c1')?.updated_at, iso(3000));
  assert.equal(store.meta.get('greeting'), 'line\nbreak "quoted" ✓');
  const row = store.db.get<{ v: Uint8Array; r: number; b: number }>('SELECT v, r, b FROM blobs WHERE k = ?', ['k']);
  assert.deepEqual(Array.from(row?.v ?? []), [0, 1, 254, 255, 10]);
  assert.equal(row?.r, 1.5e-7);
  assert.equal(row?.b, 1);
  assert.equal(schemaVersion(store.db), MIGRATIONS.length);
});

for (const kind of ['half a record', 'garbage bytes'] as const) {
  test(`a torn tail (${kind}) is dropped, earlier data kept, later writes follow valid data`, LIMIT, async (t) => {
    const dir = await withDir(t);
    let store = await openStore(dir);
    await seedConversation(store, 'c1', 3);
    const lastSeq = store.db.stats().lastSeq;
    await store.close();

    const file = await lastSegment(dir);
    const goodSize = (await stat(file)).size;
    const record = encodeRecord({ seq: lastSeq + 1, ops: [['DELETE FROM messages', null]] });
    const tail = kind === 'half a record' ? record.subarray(0, Math.floor(record.length / 2)) : Buffer.from('\u0000\u0001garbage\nmore garbage');
    await appendFile(file, tail);

    const { logger, lines } = captureLogger();
    store = await openStore(dir, { logger });
    const warning = lines.find((l) => l.event === 'store.journal_truncated');
    assert.ok(warning, 'a warning is logged');
    assert.equal(warning.level, 'warn');
    assert.equal(warning.fields.dropped_bytes, tail.length);
    assert.equal((await stat(file)).size, goodSize, 'truncated back to the last valid record');
    assert.deepEqual(await ids(store), ['c1-m0', 'c1-m1', 'c1-m2']);
    await store.messages.append({ id: 'c1-m3', conversation_id: 'c1', role: 'user', content: 'after', timestamp: iso(9000) });
    await store.close();

    const again = captureLogger();
    store = await openStore(dir, { logger: again.logger });
    t.after(() => store.close());
    assert.deepEqual(await ids(store), ['c1-m0', 'c1-m1', 'c1-m2', 'c1-m3']);
    assert.equal(
      again.lines.some((l) => l.level === 'warn' || l.level === 'error'),
      false,
      'the journal is clean now',
    );
  });
}

test('a record with a bad CRC at the end is dropped with a warning', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await seedConversation(store, 'c1', 3);
  await store.close();

  const file = await lastSegment(dir);
  const buf = await readFile(file);
  const lastLineStart = buf.lastIndexOf(0x0a, buf.length - 2) + 1;
  const at = buf.indexOf('c1-m2', lastLineStart);
  assert.ok(at > lastLineStart, 'found the last message in the last record');
  buf[at] = 'j'.charCodeAt(0); // same length, different bytes: only the checksum notices
  await writeFile(file, buf);

  const { logger, lines } = captureLogger();
  store = await openStore(dir, { logger });
  t.after(() => store.close());
  const warning = lines.find((l) => l.event === 'store.journal_truncated');
  assert.ok(warning);
  assert.match(String(warning.fields.reason), /checksum/);
  assert.equal(warning.fields.dropped_bytes, buf.length - lastLineStart);
  assert.deepEqual(await ids(store), ['c1-m0', 'c1-m1']);
  assert.equal((await stat(file)).size, lastLineStart);
});

test('compaction folds closed segments into the snapshot in a worker; writes during it survive', { timeout: 60_000 }, async (t) => {
  const dir = await withDir(t);
  const { logger, lines } = captureLogger();
  let store = await openStore(dir, { segmentBytes: 2048, logger });
  await store.conversations.create({ id: 'c1', title: 't', source: 'ws', created_at: iso(0) });
  const write = (i: number) => store.messages.append({ id: `m${i}`, conversation_id: 'c1', role: 'user', content: `message ${i} ${'y'.repeat(100)}`, timestamp: iso(i) });
  for (let i = 0; i < 100; i += 10) await Promise.all(Array.from({ length: 10 }, (_, k) => write(i + k)));

  let compactDone = false;
  const compaction = store.db.compact().then(() => {
    compactDone = true;
  });
  let ackedBeforeCompactionEnded = 0;
  await Promise.all(
    Array.from({ length: 50 }, (_, k) =>
      write(100 + k).then(() => {
        if (!compactDone) ackedBeforeCompactionEnded++;
      }),
    ),
  );
  await compaction;
  assert.ok(ackedBeforeCompactionEnded > 0, 'writes were acknowledged while the compaction ran');
  await store.db.compact();

  const stats = store.db.stats();
  assert.ok(stats.compactions >= 2, `compactions: ${stats.compactions}`);
  assert.equal(stats.segments, 1);
  assert.equal(stats.journalBytes, 0);
  assert.equal((await segments(dir)).length, 1, 'closed segments were deleted');
  assert.equal(
    lines.some((l) => l.level === 'error'),
    false,
  );

  // The snapshot alone (read directly, no journal) holds everything, and records its journal seq.
  const SQL = await loadSqlJs();
  const snap = new SQL.Database(await readFile(path.join(dir, 'service.db')));
  assert.equal(snap.exec('SELECT count(*) FROM messages')[0].values[0][0], 150);
  assert.equal(snap.exec("SELECT value FROM meta WHERE key = 'store.journal_seq'")[0].values[0][0], String(stats.lastSeq));
  snap.close();

  await write(150);
  await store.close();
  store = await openStore(dir);
  t.after(() => store.close());
  assert.equal(store.messages.count(), 151);
  assert.deepEqual((await ids(store)).slice(0, 3).concat((await ids(store)).slice(-2)), ['m0', 'm1', 'm2', 'm149', 'm150']);
});

test('the store keeps its files private: a directory it creates is 0700, snapshot, journal and lock 0600', LIMIT, async (t) => {
  const dir = path.join(await withDir(t), 'data');
  const store = await openStore(dir, { segmentBytes: 512 });
  t.after(() => store.close());
  await seedConversation(store, 'c1', 6);
  await store.db.compact();
  await seedConversation(store, 'c2', 1);
  const modeOf = async (name: string) => ((await stat(path.join(dir, name))).mode & 0o777).toString(8);
  assert.equal(await modeOf('.'), '700');
  const names = await readdir(dir);
  assert.ok(names.includes('service.db') && names.includes('service.lock') && (await segments(dir)).length > 0, names.join(' '));
  // Folders (blobs, and history.db.lock: node-sqlite3-wasm's lock on history.db) are private as directories.
  for (const name of names) assert.equal(await modeOf(name), name === 'blobs' || (name.endsWith('.lock') && name !== 'service.lock') ? '700' : '600', name);
});

test('files left open to others (an older version, an image-made directory) are made private at open', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await seedConversation(store, 'c1', 2);
  await store.db.compact();
  await seedConversation(store, 'c2', 1);
  await store.close();
  const names = await readdir(dir);
  await chmod(dir, 0o755);
  for (const name of names) await chmod(path.join(dir, name), name === 'blobs' ? 0o755 : 0o644);

  const { logger, lines } = captureLogger();
  store = await openStore(dir, { logger });
  t.after(() => store.close());
  const modeOf = async (name: string) => ((await stat(path.join(dir, name))).mode & 0o777).toString(8);
  assert.equal(await modeOf('.'), '700');
  for (const name of names) assert.equal(await modeOf(name), name === 'blobs' ? '700' : '600', name);
  assert.ok(lines.some((l) => l.event === 'store.made_private'));
  assert.deepEqual(await ids(store, 'c2'), ['c2-m0']);
  await store.close();

  // A folder of the user's used as the data directory: only the service's files change.
  await chmod(dir, 0o755);
  await writeFile(path.join(dir, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
  await chmod(path.join(dir, 'service.db'), 0o644);
  store = await openStore(dir);
  assert.equal(await modeOf('.'), '755');
  assert.equal(await modeOf('run.sh'), '755');
  assert.equal(await modeOf('service.db'), '600');
});

test("a directory a salvage kept aside (history.db.damaged-<time>) is the service's own: the data directory is still made private", LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await seedConversation(store, 'c1', 1);
  await store.close();
  const aside = path.join(dir, 'history.db.damaged-2026-11-27T17-00-00-000Z');
  await mkdir(aside, { mode: 0o755 });
  await writeFile(path.join(aside, 'history.db'), 'the damaged file', { mode: 0o644 });
  await chmod(dir, 0o755);
  store = await openStore(dir);
  t.after(() => store.close());
  const modeOf = async (name: string) => ((await stat(path.join(dir, name))).mode & 0o777).toString(8);
  assert.equal(await modeOf('.'), '700');
  assert.equal(await modeOf(path.basename(aside)), '700');
});

test('a leftover service.db.tmp is ignored and removed', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await seedConversation(store, 'c1', 2);
  await store.db.compact();
  await store.close();
  await writeFile(path.join(dir, 'service.db.tmp'), 'half-written snapshot');

  store = await openStore(dir);
  t.after(() => store.close());
  assert.deepEqual(await ids(store), ['c1-m0', 'c1-m1']);
  assert.equal((await readdir(dir)).includes('service.db.tmp'), false);
});

test('a crash between the snapshot rename and the segment delete replays nothing twice', LIMIT, async (t) => {
  const dir = await withDir(t);
  const backup = path.join(dir, 'backup');
  await mkdir(backup);
  let store = await openStore(dir);
  await store.db.write((tx) => {
    tx.run('CREATE TABLE counter (n INTEGER NOT NULL)');
    tx.run('INSERT INTO counter (n) VALUES (0)');
  });
  for (let i = 0; i < 10; i++) await store.db.write((tx) => tx.run('UPDATE counter SET n = n + 1'));
  await seedConversation(store, 'c1', 2);
  const before = await segments(dir);
  for (const name of before) await copyFile(path.join(dir, name), path.join(backup, name));
  await store.db.compact();
  assert.deepEqual(
    (await segments(dir)).filter((n) => before.includes(n)),
    [],
    'compaction deleted the segments',
  );
  for (let i = 0; i < 5; i++) await store.db.write((tx) => tx.run('UPDATE counter SET n = n + 1'));
  await store.close();

  // Put the compacted segments back, as if the process died right after the rename.
  for (const name of before) await copyFile(path.join(backup, name), path.join(dir, name));
  const { logger, lines } = captureLogger();
  store = await openStore(dir, { logger });
  t.after(() => store.close());
  assert.equal(store.db.get<{ n: number }>('SELECT n FROM counter')?.n, 15);
  assert.deepEqual(await ids(store), ['c1-m0', 'c1-m1']);
  assert.equal(store.messages.count(), 2);
  assert.equal(
    lines.some((l) => l.level === 'error' || l.level === 'warn'),
    false,
    JSON.stringify(lines),
  );
  assert.deepEqual(
    (await segments(dir)).filter((n) => before.includes(n)),
    [],
    'covered segments are deleted at start',
  );
});

test('lock: a second open in the same process fails clearly', LIMIT, async (t) => {
  const dir = await withDir(t);
  const store = await openStore(dir);
  t.after(() => store.close());
  await assert.rejects(openStore(dir), (err: Error) => {
    assert.equal(err.message, `data directory ${dir} is in use by process ${process.pid}`);
    return true;
  });
  // The failed open did not disturb the owner.
  await seedConversation(store, 'c1', 1);
  assert.deepEqual(await ids(store), ['c1-m0']);
});

test('lock: a live child process holding the store makes the open fail', { timeout: 30_000 }, async (t) => {
  const dir = await withDir(t);
  const child = spawnStoreChild('hold', dir);
  t.after(() => {
    child.proc.kill('SIGKILL');
  });
  await child.waitFor((l) => l.includes('ready'));
  await assert.rejects(openStore(dir), (err: Error) => {
    assert.equal(err.message, `data directory ${dir} is in use by process ${child.proc.pid}`);
    return true;
  });
  child.proc.stdin.end();
  assert.deepEqual(await child.exited, { code: 0, signal: null });
  const store = await openStore(dir);
  await store.close();
});

test('lock: a stale lock (dead pid, or unreadable) is taken over with a warning', { timeout: 30_000 }, async (t) => {
  const dir = await withDir(t);
  const dead = spawn(process.execPath, ['-e', '']);
  const deadPid = dead.pid;
  await new Promise((resolve) => dead.on('exit', resolve));
  assert.ok(deadPid);
  const lockFile = path.join(dir, 'service.lock');

  for (const content of [JSON.stringify({ pid: deadPid, hostname: hostname(), started_at: iso(0) }), '{"pid":']) {
    await writeFile(lockFile, content);
    // An unreadable lock is damaged once older than a lock's write takes (a young one may be another
    // starter's, being written: lock-takeover.test.ts).
    const old = new Date(Date.now() - 60_000);
    await utimes(lockFile, old, old);
    const { logger, lines } = captureLogger();
    const store = await openStore(dir, { logger });
    assert.ok(lines.some((l) => l.level === 'warn' && l.event === 'store.lock_stale'));
    assert.equal(JSON.parse(await readFile(lockFile, 'utf8')).pid, process.pid);
    await store.close();
    await assert.rejects(stat(lockFile), { code: 'ENOENT' });
  }
});

test('lock: a lock of this host from before a reboot is stale even if its pid now belongs to a live process', LIMIT, async (t) => {
  const dir = await withDir(t);
  const lockFile = path.join(dir, 'service.lock');
  // process.ppid is alive: after a reboot, pids are handed out again, so a live pid proves nothing.
  const before = { pid: process.ppid, hostname: hostname(), started_at: iso(0), boot_id: '00000000-0000-0000-0000-000000000000' };
  await writeFile(lockFile, JSON.stringify(before));
  const { logger, lines } = captureLogger();
  const store = await openStore(dir, { logger });
  t.after(() => store.close());
  const stale = lines.find((l) => l.event === 'store.lock_stale');
  assert.ok(stale);
  assert.match(String(stale.fields.reason), /restarted/);
  assert.equal(JSON.parse(await readFile(lockFile, 'utf8')).pid, process.pid);
});

test('lock: --break-lock (breakLock) does not take a lock whose process is alive on this host', { timeout: 30_000 }, async (t) => {
  const dir = await withDir(t);
  const child = spawnStoreChild('hold', dir);
  t.after(() => {
    child.proc.kill('SIGKILL');
  });
  await child.waitFor((l) => l.includes('ready'));
  await assert.rejects(openStore(dir, { breakLock: true }), new RegExp(`in use by process ${child.proc.pid}`));
  child.proc.stdin.end();
  await child.exited;
});

test('a write that throws is rolled back and journals nothing', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await seedConversation(store, 'c1', 1);
  const before = store.db.stats();

  await assert.rejects(
    store.db.write((tx) => {
      tx.run('INSERT INTO memory (id, content, created_at, updated_at) VALUES (?, ?, ?, ?)', ['x', 'nope', iso(0), iso(0)]);
      assert.equal(tx.get<{ n: number }>('SELECT count(*) AS n FROM memory')?.n, 1, 'visible inside the transaction');
      throw new Error('boom');
    }),
    /boom/,
  );
  // A failed statement aborts the write even when the callback swallows the error.
  await assert.rejects(
    store.db.write((tx) => {
      tx.run('INSERT INTO memory (id, content, created_at, updated_at) VALUES (?, ?, ?, ?)', ['y', 'nope', iso(0), iso(0)]);
      try {
        tx.run('INSERT INTO conversations (id) VALUES (?)', ['no-title']);
      } catch {
        // ignored on purpose
      }
    }),
    /NOT NULL/,
  );
  await assert.rejects(store.db.write((async () => {}) as never), /synchronous/);
  await assert.rejects(store.messages.append({ id: 'orphan', conversation_id: 'nope', role: 'user', content: '', timestamp: iso(0) }), /not found/);

  assert.equal(store.memory.all(10).length, 0);
  assert.equal(await store.messages.get('orphan'), undefined);
  assert.deepEqual(store.db.stats().lastSeq, before.lastSeq);
  assert.equal(store.db.stats().journalBytes, before.journalBytes);
  await store.close();
  store = await openStore(dir);
  t.after(() => store.close());
  assert.equal(store.memory.all(10).length, 0);
  assert.equal(store.messages.count(), 1);
});

test('group commit: writes of one tick share one write + fdatasync, each resolved once durable', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await store.conversations.create({ id: 'c1', title: 't', source: 'ws', created_at: iso(0) });
  const before = store.db.stats();
  const writes = Array.from({ length: 50 }, (_, i) => store.messages.append({ id: `m${i}`, conversation_id: 'c1', role: 'user', content: `m${i}`, timestamp: iso(i) }));
  await Promise.all(writes);
  const after = store.db.stats();
  assert.equal(after.lastSeq - before.lastSeq, 50);
  assert.equal(after.flushes - before.flushes, 1);
  await store.close();
  store = await openStore(dir);
  t.after(() => store.close());
  assert.equal(store.messages.count('c1'), 50);
});

test('SIGKILL: every acknowledged write of a killed child is there after reopen', { timeout: 60_000 }, async (t) => {
  const dir = await withDir(t);
  const child = spawnStoreChild('writer', dir);
  t.after(() => {
    child.proc.kill('SIGKILL');
  });
  await child.waitFor((l) => l.filter((x) => x.startsWith('m')).length >= 400, 40_000);
  child.proc.kill('SIGKILL');
  const exit = await child.exited;
  assert.equal(exit.signal, 'SIGKILL');
  const acked = child.lines.filter((l) => /^m\d+$/.test(l));
  assert.ok(acked.length >= 400);

  const { logger, lines } = captureLogger();
  const store = await openStore(dir, { logger });
  t.after(() => store.close());
  const stored = await Promise.all(acked.map((id) => store.messages.get(id)));
  const missing = acked.filter((_, i) => stored[i] === undefined);
  assert.deepEqual(missing, [], 'acknowledged writes are durable');
  assert.ok(store.messages.count() >= acked.length);
  assert.ok(
    lines.some((l) => l.event === 'store.lock_stale'),
    "the dead child's lock was taken over",
  );
  assert.equal(
    lines.some((l) => l.level === 'error'),
    false,
    JSON.stringify(lines.filter((l) => l.level === 'error')),
  );
});

test('messages.recent: most recent N, oldest first, tools only when asked', LIMIT, async (t) => {
  const dir = await withDir(t);
  const store = await openStore(dir);
  t.after(() => store.close());
  await store.conversations.create({ id: 'c1', title: 't', source: 'ws', created_at: iso(0) });
  await store.conversations.create({ id: 'c2', title: 't', source: 'ws', created_at: iso(0) });
  const roles = ['user', 'assistant', 'tool', 'assistant', 'user', 'assistant'] as const;
  await store.messages.appendMany(
    roles.map((role, i) => ({
      id: `m${i}`,
      conversation_id: 'c1',
      role,
      content: `content ${i}`,
      timestamp: iso(1000 * (i + 1)),
      tool_name: role === 'tool' ? 'read_file' : undefined,
      user_id: role === 'user' ? 'alice' : undefined,
      data: role === 'tool' ? { ok: true, n: [1, 2] } : undefined,
    })),
  );
  await store.messages.append({ id: 'other', conversation_id: 'c2', role: 'user', content: 'x', timestamp: iso(500) });

  assert.deepEqual(
    (await store.messages.recent('c1', { limit: 2 })).map((m) => m.id),
    ['m4', 'm5'],
  );
  assert.deepEqual(
    (await store.messages.recent('c1', { limit: 10 })).map((m) => m.id),
    ['m0', 'm1', 'm3', 'm4', 'm5'],
  );
  assert.deepEqual(
    (await store.messages.recent('c1', { limit: 4, includeTools: true })).map((m) => m.id),
    ['m2', 'm3', 'm4', 'm5'],
  );
  assert.deepEqual(await store.messages.recent('c1', { limit: 0 }), []);
  assert.deepEqual(await store.messages.recent('missing', { limit: 5 }), []);
  const tool = (await store.messages.recent('c1', { limit: 10, includeTools: true }))[2];
  assert.equal(tool.tool_name, 'read_file');
  assert.deepEqual(tool.data, { ok: true, n: [1, 2] });
  assert.equal((await store.messages.get('m0'))?.user_id, 'alice');
  assert.equal((await store.messages.get('m1'))?.data, null);
  assert.equal(store.messages.count(), 7);
  assert.equal(store.messages.count('c1'), 6);
  assert.equal(store.conversations.get('c1')?.updated_at, iso(6000), 'appendMany bumps updated_at to the newest message');
  assert.equal(store.conversations.get('c2')?.updated_at, iso(500));
});

test('conversations.list: newest activity first, stable ties, strict before cursor, source filter; delete', LIMIT, async (t) => {
  const dir = await withDir(t);
  const store = await openStore(dir);
  t.after(() => store.close());
  await store.conversations.create({ id: 'a', title: 'A', source: 'ws', created_at: iso(1000) });
  await store.conversations.create({ id: 'b', title: 'B', source: 'editor', created_at: iso(2000) });
  await store.conversations.create({ id: 'c', title: 'C', source: 'ws', created_at: iso(2000) });
  await store.conversations.create({ id: 'd', title: 'D', source: 'webhook:acme', created_at: iso(3000) });
  const list = (o: Parameters<Store['conversations']['list']>[0]) => store.conversations.list(o).map((c) => c.id);

  assert.deepEqual(list({ limit: 10 }), ['d', 'c', 'b', 'a']);
  assert.deepEqual(list({ limit: 2 }), ['d', 'c']);
  assert.deepEqual(list({ limit: 10, before: iso(2000) }), ['a'], 'strictly older than the cursor');
  assert.deepEqual(list({ limit: 10, before: iso(3000) }), ['c', 'b', 'a']);
  assert.deepEqual(list({ limit: 10, source: 'ws' }), ['c', 'a']);
  assert.deepEqual(list({ limit: 10, source: 'ws', before: iso(2000) }), ['a']);

  // A new message moves a conversation to the top; touch sets the time directly.
  await store.messages.append({ id: 'm1', conversation_id: 'a', role: 'user', content: 'hi', timestamp: iso(4000) });
  assert.deepEqual(list({ limit: 10 }), ['a', 'd', 'c', 'b']);
  assert.equal(await store.conversations.touch('b', iso(5000)), true);
  assert.equal(await store.conversations.touch('nope', iso(5000)), false);
  assert.deepEqual(list({ limit: 1 }), ['b']);

  assert.equal(await store.conversations.delete('a'), true);
  assert.equal(await store.conversations.delete('a'), false);
  assert.equal(store.conversations.get('a'), undefined);
  assert.equal(store.messages.count('a'), 0);
  await assert.rejects(store.conversations.create({ id: 'b', title: 'dup', source: 'ws', created_at: iso(0) }), /UNIQUE/);
});

test('memory, registrations and meta repositories', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  const a = await store.memory.put('User prefers dark mode', { now: iso(1000) });
  const b = await store.memory.put('The project uses 100% TypeScript', { now: iso(2000) });
  await store.memory.put('Dark roast coffee, no sugar', { now: iso(3000) });
  assert.deepEqual(
    store.memory.search('dark', 10).map((m) => m.content),
    ['Dark roast coffee, no sugar', 'User prefers dark mode'],
  );
  assert.deepEqual(
    store.memory.search('DARK mode', 10).map((m) => m.id),
    [a.id],
  );
  assert.deepEqual(
    store.memory.search('100%', 10).map((m) => m.id),
    [b.id],
  );
  assert.deepEqual(store.memory.search('1_0', 10), [], '_ is literal, not a wildcard');
  assert.deepEqual(store.memory.search('  ', 10), []);
  assert.equal(store.memory.search('dark', 1).length, 1);
  assert.equal(store.memory.all(2).length, 2);
  assert.equal(await store.memory.delete(a.id), true);
  assert.equal(await store.memory.delete(a.id), false);

  await store.registrations.upsert('laptop', 'key-1', iso(1000));
  await store.registrations.upsert('laptop', 'key-2', iso(2000));
  assert.deepEqual(store.registrations.get('laptop'), { machine_name: 'laptop', public_key: 'key-2', created_at: iso(1000), updated_at: iso(2000) });
  assert.equal(store.registrations.get('phone'), undefined);

  assert.equal(store.meta.get('k'), undefined);
  await store.meta.set('k', 'v1');
  await store.meta.set('k', 'v2');
  await store.close();

  store = await openStore(dir);
  t.after(() => store.close());
  assert.equal(store.meta.get('k'), 'v2');
  assert.equal(store.memory.all(10).length, 2);
  assert.equal(store.registrations.get('laptop')?.public_key, 'key-2');
});

test('registrations: re-registering a marked key in another spelling keeps its e2e v2 mark; another key starts afresh', LIMIT, async (t) => {
  const store = await openStore(await withDir(t));
  t.after(() => store.close());
  const key = generateKeyPair().publicKey;
  const standard = Buffer.from(fromBase64url(key)!).toString('base64'); // an older spelling of the same key
  await store.registrations.upsert('phone', standard);
  await store.registrations.markE2eV2([standard]);
  await store.registrations.upsert('phone', key);
  assert.deepEqual(store.registrations.keys(), [{ public_key: key, e2e_v2: true }]);
  const other = generateKeyPair().publicKey;
  await store.registrations.upsert('phone', other);
  assert.deepEqual(store.registrations.keys(), [{ public_key: other, e2e_v2: false }]);
});

test('migrations: a new data directory gets its whole schema in one journal record (one fsync at start, not one per version), its meta table in it too', LIMIT, async (t) => {
  const dir = await withDir(t);
  const store = await openStore(dir);
  await store.close();
  const records = (await Promise.all((await listSegments(dir, 'service.db')).map(async (s) => scanRecords(await readFile(s.path)).records))).flat();
  const migrations = records.filter((r) => r.ops.some(([sql]) => sql.startsWith('PRAGMA user_version')));
  assert.equal(migrations.length, 1, `migration records: ${migrations.length}`);
  // The first record: the meta table every open makes, then the final schema (src/store/schema.ts), not each migration.
  assert.equal(records[0], migrations[0]);
  assert.match(records[0].ops[0][0], /^CREATE TABLE IF NOT EXISTS meta /);
  assert.deepEqual(
    migrations[0].ops.filter(([sql]) => sql.startsWith('PRAGMA user_version')).map(([sql]) => sql),
    [`PRAGMA user_version = ${MIGRATIONS.length}`],
  );
  const reopened = await openStore(dir);
  t.after(() => reopened.close());
  assert.equal(schemaVersion(reopened.db), MIGRATIONS.length);
});

test('migrations: a new one is one more entry; a newer schema than known is refused', LIMIT, async (t) => {
  const dir = await withDir(t);
  const v2 = [...MIGRATIONS, 'CREATE TABLE extra (x TEXT)'];
  let store = await openStore(dir, { migrations: v2 });
  assert.equal(store.db.get<{ user_version: number }>('PRAGMA user_version')?.user_version, v2.length);
  await store.db.write((tx) => tx.run('INSERT INTO extra (x) VALUES (?)', ['kept']));
  await store.close();

  store = await openStore(dir, { migrations: v2 });
  assert.equal(store.db.get<{ x: string }>('SELECT x FROM extra')?.x, 'kept');
  await store.close();
  await assert.rejects(openStore(dir), /newer than this version/);
  // The refused open released its lock.
  const db = await Database.open(dir);
  await db.close();
});
