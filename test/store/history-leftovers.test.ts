// What an open of the store leaves in the data directory when it fails, and what it does with files a
// crash left there: an open refused for a damaged service.db changes nothing (its message says so),
// and the files of a new history.db built aside (history-db.ts createHistoryFile) that a crash left are
// removed, never applied to the new file. Real files in temp dirs, the real history worker.
import assert from 'node:assert/strict';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Database as SqliteFile } from 'node-sqlite3-wasm';
import { HISTORY_FILE_NAME, openStore } from '../../src/store/index';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 60_000 };

async function withDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { dir, cleanup } = await tempDir('history-leftovers-test-');
  t.after(cleanup);
  return dir;
}

/** Every file of `dir` with its bytes (folders by name). */
async function contents(dir: string): Promise<Map<string, Buffer | 'folder'>> {
  const out = new Map<string, Buffer | 'folder'>();
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    out.set(entry.name, entry.isDirectory() ? 'folder' : await readFile(path.join(dir, entry.name)));
  }
  return out;
}

/** A data directory with one conversation and its message, closed. */
async function storeWithMessage(dir: string): Promise<void> {
  const store = await openStore(dir);
  await store.conversations.create({ id: 'c', title: 'c', source: 'ws', created_at: new Date(0).toISOString() });
  await store.messages.append({ id: 'm', conversation_id: 'c', role: 'user', content: 'kept', timestamp: new Date(0).toISOString() });
  await store.close();
}

/** The names of the tables and indexes of the SQLite file `file`. */
function objectsOf(file: string): string[] {
  const db = new SqliteFile(file, { readOnly: true });
  try {
    db.exec('PRAGMA locking_mode = EXCLUSIVE');
    return db.all('SELECT name FROM sqlite_master ORDER BY name').map((r) => String(r.name));
  } finally {
    db.close();
  }
}

test('an open refused for a damaged service.db leaves history.db byte-identical and adds no file to the data directory', LIMIT, async (t) => {
  const dir = await withDir(t);
  await storeWithMessage(dir);
  await writeFile(path.join(dir, 'service.db'), Buffer.alloc(8192, 0x5a));
  const before = await contents(dir);
  assert.ok(before.has(HISTORY_FILE_NAME));

  await assert.rejects(openStore(dir), /service\.db is not a readable database/);
  const after = await contents(dir);
  assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort(), 'the same files');
  for (const [name, bytes] of before) {
    const now = after.get(name);
    assert.ok(bytes === 'folder' ? now === 'folder' : Buffer.isBuffer(now) && now.equals(bytes), `${name} was changed`);
  }
});

test('an open refused for a damaged service.db, history.db not made yet, creates no history.db (nor any other file)', LIMIT, async (t) => {
  const dir = await withDir(t);
  await writeFile(path.join(dir, 'service.db'), Buffer.alloc(8192, 0x5a));
  const before = await contents(dir);
  assert.ok(!before.has(HISTORY_FILE_NAME));

  await assert.rejects(openStore(dir), /service\.db is not a readable database/);
  const after = await contents(dir);
  assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort(), 'the same files');
  assert.ok((after.get('service.db') as Buffer).equals(before.get('service.db') as Buffer), 'service.db was changed');
});

test('a new history.db built aside never takes a WAL a crash left beside it (history.db.new-wal)', LIMIT, async (t) => {
  const dir = await withDir(t);
  // A WAL of another database, whole and committed (a table `planted`), where the build aside would meet it.
  const other = path.join(dir, 'other.db');
  const db = new SqliteFile(other);
  db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE planted (x); INSERT INTO planted VALUES (1);');
  const fresh = path.join(dir, `${HISTORY_FILE_NAME}.new`);
  await copyFile(`${other}-wal`, `${fresh}-wal`);
  db.close();
  await writeFile(`${fresh}-shm`, Buffer.alloc(32768, 0x11));

  const store = await openStore(dir);
  await store.close();
  const objects = objectsOf(path.join(dir, HISTORY_FILE_NAME));
  assert.ok(objects.includes('bodies') && !objects.includes('planted'), objects.join(', '));
  assert.deepEqual(
    (await readdir(dir)).filter((name) => name.startsWith(`${HISTORY_FILE_NAME}.new`)),
    [],
  );
});

test("a new history.db's build aside that a crash left (history.db.new, its WAL, its lock) is removed when history.db is there", LIMIT, async (t) => {
  const dir = await withDir(t);
  await storeWithMessage(dir);
  const fresh = path.join(dir, `${HISTORY_FILE_NAME}.new`);
  await writeFile(fresh, Buffer.alloc(4096, 0x22));
  await writeFile(`${fresh}-wal`, Buffer.alloc(4096, 0x33));
  await writeFile(`${fresh}-shm`, Buffer.alloc(4096, 0x44));
  await mkdir(`${fresh}.lock`);

  const store = await openStore(dir);
  assert.deepEqual(
    (await store.messages.recent('c')).map((m) => m.content),
    ['kept'],
  );
  await store.close();
  assert.deepEqual(
    (await readdir(dir)).filter((name) => name.startsWith(`${HISTORY_FILE_NAME}.new`)),
    [],
  );
});
