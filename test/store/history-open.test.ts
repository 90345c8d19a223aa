// Opening a new history.db (every start of a new data directory): its tables are made durable by the
// open's one transaction, not one fsync each (issue 25, the start row). Counted where they happen: the
// worker's fsyncs (HistoryStats.syncs, src/store/history/sync-count.ts), on a real file in a temp dir.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Database as SqliteFile } from 'node-sqlite3-wasm';
import { HistoryStore } from '../../src/store/history/history-store';
import { tempDir } from '../helpers/temp';

test("a new history.db's open costs the WAL's set-up and one commit, not a commit per table", async (t) => {
  const temp = await tempDir('ra-history-open-');
  t.after(temp.cleanup);
  const created = await HistoryStore.open(temp.dir);
  const atCreation = (await created.stats()).syncs;
  await created.close();
  const reopened = await HistoryStore.open(temp.dir);
  const atReopen = (await reopened.stats()).syncs;
  // The tables are there (the search index too).
  assert.deepEqual(await reopened.search('hello', null, 10), []);
  await reopened.close();
  // A reopen writes the open's transaction (and checks the file); a creation adds one fsync of the new
  // file, made whole aside (history-db.ts createHistoryFile). The 13 statements of the schema were once
  // 13 commits with an fsync each (21 fsyncs at creation), then turning the file to WAL in place and a
  // rollback journal's commits (9).
  assert.ok(atCreation <= atReopen + 1, `fsyncs at creation ${atCreation}, at a reopen ${atReopen}`);
});

/** The schema a history.db holds (sqlite_master), read from the closed file. */
function schemaOf(file: string): unknown[] {
  const db = new SqliteFile(file, { readOnly: true });
  try {
    db.exec('PRAGMA locking_mode = EXCLUSIVE');
    return db.all('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name');
  } finally {
    db.close();
  }
}

test('a new history.db built before the lock (the boot told the directory) is the one built at the open: the same schema, search, marks and fsyncs', async (t) => {
  const temp = await tempDir('ra-history-prepared-');
  t.after(temp.cleanup);
  const inPlace = join(temp.dir, 'in-place');
  const prepared = join(temp.dir, 'prepared');
  await Promise.all([mkdir(inPlace), mkdir(prepared)]);
  const a = await HistoryStore.open(inPlace);
  const b = await HistoryStore.boot(undefined, prepared).open(prepared);
  await b.entriesDurable;
  for (const store of [a, b.store]) assert.deepEqual(await store.put([{ conversation_id: 'c', role: 'user', content: 'hello prepared world', data: null }]), [1]);
  assert.deepEqual(
    (await b.store.search('prepared', null, 10)).map((hit) => hit.key),
    [1],
  );
  assert.deepEqual((await b.store.stats()).syncs, (await a.stats()).syncs);
  assert.equal(b.store.markBeforeOpen, a.markBeforeOpen);
  await a.close();
  await b.store.close();
  assert.deepEqual(schemaOf(join(prepared, 'history.db')), schemaOf(join(inPlace, 'history.db')));
  // Nothing of the build is left beside it.
  assert.deepEqual((await readdir(prepared)).sort(), (await readdir(inPlace)).sort());
});

test('a directory that has its history.db: the boot told of it builds nothing, and its bodies are there after the open', async (t) => {
  const temp = await tempDir('ra-history-prepared-');
  t.after(temp.cleanup);
  const first = await HistoryStore.open(temp.dir);
  await first.put([{ conversation_id: 'c', role: 'assistant', content: 'kept across the open', data: null }]);
  await first.close();
  const again = await HistoryStore.boot(undefined, temp.dir).open(temp.dir);
  await again.entriesDurable;
  assert.equal(again.store.keysBeforeOpen, 1);
  assert.equal((await again.store.get([1])).get(1)?.content, 'kept across the open');
  await again.store.close();
});

test("a prebuild's temporary directory left by a process that is gone (killed mid-build) is removed by the next prebuild; a live process's is kept", async (t) => {
  const temp = await tempDir('ra-history-prepared-');
  t.after(temp.cleanup);
  const gone = spawnSync(process.execPath, ['-e', '0']).pid;
  // Another process that is alive (this one's own directories are passed over before asking).
  const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  t.after(() => other.kill());
  const dead = join(tmpdir(), `ra-history-new-${gone}-left`);
  const live = join(tmpdir(), `ra-history-new-${other.pid}-live`);
  // As mkdtemp makes them: private to this user.
  await Promise.all([mkdir(dead, { mode: 0o700 }), mkdir(live, { mode: 0o700 })]);
  await writeFile(join(dead, 'history.db'), 'cut short');
  t.after(() => rm(live, { recursive: true, force: true }));
  t.after(() => rm(dead, { recursive: true, force: true }));
  const opened = await HistoryStore.boot(undefined, temp.dir).open(temp.dir);
  await opened.entriesDurable;
  await opened.store.close();
  assert.equal(existsSync(dead), false, 'the dead process leftover removed');
  assert.equal(existsSync(live), true, "a live process's build kept");
});

test("the sweep of dead prebuilds removes only this user's own private directories: never a link, another user's entry or an open one", async (t) => {
  // Review of s12/start12: /tmp is shared; an entry named like a dead prebuild may be another user's, and
  // a recursive removal that runs through a link they swap in deletes whatever it points to.
  const temp = await tempDir('ra-history-sweep-');
  t.after(temp.cleanup);
  const gone = spawnSync(process.execPath, ['-e', '0']).pid;
  const precious = join(temp.dir, 'precious');
  await mkdir(precious);
  await writeFile(join(precious, 'notes.txt'), 'keep me');
  const linked = join(tmpdir(), `ra-history-new-${gone}-link`);
  const open = join(tmpdir(), `ra-history-new-${gone}-open`);
  const theirs = join(tmpdir(), `ra-history-new-${gone}-theirs`);
  await symlink(precious, linked);
  await mkdir(open, { mode: 0o755 });
  await chmod(open, 0o755);
  await writeFile(join(open, 'x'), 'in a directory anyone may read');
  const root = process.getuid?.() === 0;
  if (root) {
    await mkdir(theirs, { mode: 0o700 });
    await chown(theirs, 65534, 65534);
  }
  t.after(() => Promise.all([linked, open, theirs].map((p) => rm(p, { recursive: true, force: true }))));
  const opened = await HistoryStore.boot(undefined, temp.dir).open(temp.dir);
  await opened.entriesDurable;
  await opened.store.close();
  assert.equal(existsSync(linked), true, 'a link is not swept');
  assert.equal(await readFile(join(precious, 'notes.txt'), 'utf8'), 'keep me');
  assert.equal(existsSync(open), true, 'a directory others may read or write is not one of ours');
  if (root) assert.equal(existsSync(theirs), true, "another user's entry is not swept");
});
