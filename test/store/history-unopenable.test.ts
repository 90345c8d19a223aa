// history.db damaged where SQLite cannot open it at all (bench/damage-sweep.ts found both): page 1 (the
// file's header and its schema) and the root page of history_meta (read by every open for its sync
// mark). Before s31 both were refused "could not be opened", with no word of --recover, and --recover
// refused them the same way: the service could not start until the file was moved aside by hand.
// Now: refused naming --recover; `recover` opens, serves every message it can (bodies the damaged file
// still gives, the journal's copies, the placeholder for the rest; cold rows that are gone counted as
// lost), says so with honest counts, keeps the damaged file aside, and the next open is clean.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { renameSync } from 'node:fs';
import { cp, open as openFile, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Database as SqliteFile } from 'node-sqlite3-wasm';
import { HISTORY_FILE_NAME, LOST_BODY_TEXT, openStore } from '../../src/store/index';
import type { MessageRow, NewMessage, Store } from '../../src/store/index';
import { BULKY_NOW, bulkyContent, captureLogger, tempDir } from '../helpers/store-utils';

const LIMIT = { timeout: 120_000 };
const OLD = BULKY_NOW - 30 * 86_400_000;
const PAGE = 4096;
const iso = (ms: number) => new Date(ms).toISOString();

async function withDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { dir, cleanup } = await tempDir('history-unopenable-test-');
  t.after(cleanup);
  return dir;
}

function message(conversationId: string, id: string, content: string, ms: number): NewMessage {
  return { id, conversation_id: conversationId, role: 'user', content, timestamp: iso(ms) };
}

/**
 * A store closed cleanly: conversation 'old' of 200 bulky messages whose rows moved to history.db (cold),
 * and 'new' of 5 messages kept in service.db. Its directory.
 */
async function closedStore(t: Parameters<typeof withDir>[0]): Promise<string> {
  const dir = await withDir(t);
  let store = await openStore(dir, { hotMessages: 0 });
  await store.conversations.create({ id: 'old', title: 'old', source: 'ws', created_at: iso(OLD) });
  for (let batch = 0; batch < 10; batch++) {
    await store.messages.appendMany(Array.from({ length: 20 }, (_, j) => batch * 20 + j).map((i) => message('old', `o${i}`, bulkyContent(i), OLD + i)));
  }
  await store.maintenance.run();
  assert.equal(store.db.get<{ n: number }>("SELECT count(*) AS n FROM messages WHERE conversation_id = 'old'")?.n, 0, "'old' moved to history.db");
  await store.close();
  store = await openStore(dir);
  await store.conversations.create({ id: 'new', title: 'new', source: 'ws', created_at: iso(BULKY_NOW) });
  for (let i = 0; i < 5; i++) await store.messages.append(message('new', `n${i}`, `new ${i}`, BULKY_NOW + i));
  await store.close();
  return dir;
}

/** The root page (1-based) of `name` in `file`'s schema. */
function rootPage(file: string, name: string): number {
  const reading = new SqliteFile(file, { readOnly: true });
  try {
    reading.exec('PRAGMA locking_mode = EXCLUSIVE');
    return Number(reading.get('SELECT rootpage FROM sqlite_master WHERE name = ?', [name])?.rootpage);
  } finally {
    reading.close();
  }
}

/** Overwrites page `page` (1-based) of `file` with 0xff bytes, as a bad sector or a stray write would. */
async function overwritePage(file: string, page: number): Promise<void> {
  const fh = await openFile(file, 'r+');
  await fh.write(Buffer.alloc(PAGE, 0xff), 0, PAGE, (page - 1) * PAGE);
  await fh.close();
}

const digest = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

/** What a conversation serves: each message's id and its body, or 'lost' for the placeholder. */
const served = (messages: MessageRow[]) => messages.map((m) => [m.id, m.content === LOST_BODY_TEXT ? 'lost' : m.content]);

/** The salvage's directories beside history.db (history.db.damaged-<time>). */
const asides = async (dir: string) => (await readdir(dir)).filter((f) => /^history\.db\.damaged-[^.]*$/.test(f));

/**
 * `openStore` refuses naming --recover; `recover` opens and says it rebuilt the file (`notice`), keeping
 * the damaged one aside as it was; the next open says nothing and serves the same. What the recovered
 * store served, by conversation.
 */
async function recoverAndReopen(t: Parameters<typeof withDir>[0], dir: string): Promise<{ old: MessageRow[]; fresh: MessageRow[]; notice: string }> {
  const file = path.join(dir, HISTORY_FILE_NAME);
  const damaged = await digest(file);
  await assert.rejects(openStore(dir), /history\.db is damaged \(.*\).*serve --recover/s);
  assert.equal(await digest(file), damaged, 'a refused open changes nothing');

  let store: Store = await openStore(dir, { recover: true });
  let old: MessageRow[];
  let fresh: MessageRow[];
  let notice: string;
  try {
    notice = String(await store.problem());
    assert.match(notice, /history\.db was damaged .* rebuilt by --recover/);
    old = await store.messages.recent('old', { limit: 1000 });
    fresh = await store.messages.recent('new', { limit: 100 });
    assert.equal(store.messages.count('old'), old.length, "'old' counts what it serves");
  } finally {
    // Closed without a write: service.db has not noted the rebuild's sync mark.
    await store.close();
  }
  const kept = await asides(dir);
  assert.equal(kept.length, 1, kept.join(', '));
  assert.equal(await digest(path.join(dir, kept[0], HISTORY_FILE_NAME)), damaged, 'the damaged file is kept aside as it was');

  // The next open finds the rebuild whole and not behind service.db (its sync mark: history_meta's).
  const { logger, lines } = captureLogger();
  store = await openStore(dir, { logger });
  t.after(() => store.close());
  assert.equal(await store.problem(), null, 'the next open says nothing');
  assert.deepEqual(
    lines.filter((l) => l.level === 'error' || l.level === 'warn'),
    [],
  );
  assert.deepEqual(served(await store.messages.recent('old', { limit: 1000 })), served(old));
  assert.deepEqual(served(await store.messages.recent('new', { limit: 100 })), served(fresh));
  assert.equal(store.messages.count('old'), old.length);
  // The rebuild takes new messages, with keys of their own.
  await store.messages.append(message('new', 'after', 'written after the rebuild', BULKY_NOW + 100));
  assert.deepEqual(served(await store.messages.recent('new', { limit: 100 })), [...served(fresh), ['after', 'written after the rebuild']]);
  return { old, fresh, notice };
}

/** Whether `notice` counts what was served: bodies read back and lost (placeholders), cold rows lost whole. */
function assertCounted(notice: string, conversations: MessageRow[][], coldLost: number): void {
  const all = conversations.flat();
  const lost = all.filter((m) => m.content === LOST_BODY_TEXT).length;
  assert.match(notice, new RegExp(`: ${all.length - lost} bodies read back, ${lost} lost \\(`));
  if (coldLost === 0) assert.doesNotMatch(notice, /lost whole/);
  else assert.match(notice, new RegExp(`; ${coldLost} messages of 1 conversations whose rows were on its damaged pages are lost whole`));
}

// Each page SQLite could not open the file past, and what of the file --recover reads.
const WHOLE: Array<{ what: string; page: (file: string) => number }> = [
  // Rebuilt from the damaged file's other tables: only history_meta is new.
  { what: "history_meta's root page overwritten: --recover reads every body and cold row from the damaged file, rebuilds history_meta", page: (file) => rootPage(file, 'history_meta') },
  // Read through a new file's page 1: the same tables at the same root pages.
  { what: 'page 1 (header and schema) overwritten: --recover reads the file through a new page 1', page: () => 1 },
];

for (const { what, page } of WHOLE) {
  test(`${what}: refused naming --recover; every message back whole, none counted lost, and the next open is clean`, LIMIT, async (t) => {
    const dir = await closedStore(t);
    const file = path.join(dir, HISTORY_FILE_NAME);
    await overwritePage(file, page(file));

    const { old, fresh, notice } = await recoverAndReopen(t, dir);
    assert.deepEqual(
      served(old),
      Array.from({ length: 200 }, (_, i) => [`o${i}`, bulkyContent(i)]),
    );
    assert.deepEqual(
      served(fresh),
      Array.from({ length: 5 }, (_, i) => [`n${i}`, `new ${i}`]),
    );
    assertCounted(notice, [old, fresh], 0);
  });
}

/**
 * Makes `file` (closed) a history.db of another layout: the same tables, created in another order (the
 * search index before `bodies`, as another version or a tool could have), so that a new file's root pages
 * name other tables here: a new file's `bodies` is the search index's data here (rows keyed 1 and 10
 * among the bodies' keys, of another shape), its `cold_messages` the same table.
 */
function relaidOut(file: string): void {
  const old = new SqliteFile(file, { readOnly: true });
  old.exec('PRAGMA locking_mode = EXCLUSIVE');
  // The search index's own tables and the automatic ones are made by SQLite with their table.
  const creates = old
    .all("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'bodies_fts_%' AND name <> 'sqlite_sequence'")
    .map((r) => ({ name: String(r.name), sql: String(r.sql) }));
  const tables = ['history_meta', 'cold_messages', 'cold_usage', 'bodies', 'sqlite_sequence'];
  const rows = new Map(tables.map((table) => [table, old.all(`SELECT * FROM ${table}`)]));
  old.close();
  const order = (c: { name: string }) => (c.name === 'history_meta' ? 0 : c.name === 'bodies_fts' ? 1 : 2);
  const relaid = `${file}.relaid`;
  const db = new SqliteFile(relaid);
  db.exec('PRAGMA auto_vacuum = INCREMENTAL; BEGIN');
  for (const c of [...creates].sort((a, b) => order(a) - order(b))) db.exec(c.sql);
  db.exec('DELETE FROM sqlite_sequence');
  for (const [table, list] of rows) {
    for (const row of list) {
      const values = Object.values(row) as Array<string | number | null>;
      db.run(`INSERT INTO ${table} (${Object.keys(row).join(', ')}) VALUES (${values.map(() => '?').join(', ')})`, values);
    }
  }
  db.exec('COMMIT');
  db.close();
  renameSync(relaid, file);
}

test(
  "page 1 overwritten in a file of another layout: a new page 1 is not used to read it (its bodies' root holds the search index's data); what is lost is counted, nothing is read as another table's rows",
  LIMIT,
  async (t) => {
    const dir = await closedStore(t);
    const file = path.join(dir, HISTORY_FILE_NAME);
    relaidOut(file);
    assert.notEqual(rootPage(file, 'bodies'), 5, "the layout differs from a new file's");
    await overwritePage(file, 1);

    const { old, fresh, notice } = await recoverAndReopen(t, dir);
    for (const m of fresh) if (m.content !== LOST_BODY_TEXT) assert.equal(m.content, `new ${m.id.slice(1)}`);
    for (const m of old) if (m.content !== LOST_BODY_TEXT) assert.equal(m.content, bulkyContent(Number(m.id.slice(1))));
    assert.deepEqual(
      fresh.map((m) => m.id),
      ['n0', 'n1', 'n2', 'n3', 'n4'],
      "every message of 'new' is served",
    );
    // 'new' from the journal's copies; 'old''s rows were in history.db only.
    assert.deepEqual(old, []);
    assertCounted(notice, [old, fresh], 200);
  },
);

// Keys after --recover: the damaged file's counter is read through a new page 1 (the journal's copies
// compacted away), or, in a file of another layout (not read), the journal's copies are above them.
const KEYS: Array<{ what: string; compact: boolean; relaid: boolean }> = [
  { what: "the journal compacted: the damaged file's key counter, read through a new page 1", compact: true, relaid: false },
  { what: "a file of another layout (not read): the journal's copies of the deleted bodies", compact: false, relaid: true },
];

for (const { what, compact, relaid } of KEYS) {
  test(`page 1 overwritten, ${what}: keys given after --recover start above every key given before, a deleted conversation's too`, LIMIT, async (t) => {
    const dir = await withDir(t);
    let store = await openStore(dir);
    for (const id of ['kept', 'gone']) await store.conversations.create({ id, title: id, source: 'ws', created_at: iso(BULKY_NOW) });
    for (let i = 0; i < 3; i++) await store.messages.append(message('kept', `k${i}`, `kept ${i}`, BULKY_NOW + i));
    for (let i = 0; i < 3; i++) await store.messages.append(message('gone', `g${i}`, `gone ${i}`, BULKY_NOW + 10 + i));
    const keyOf = (s: Store, id: string) => Number(s.db.get<{ body_key: number }>('SELECT body_key FROM messages WHERE id = ?', [id])?.body_key);
    const highest = keyOf(store, 'g2');
    assert.ok(highest > keyOf(store, 'k2'));
    await store.conversations.delete('gone');
    // Its bodies freed: service.db no longer refers to them, not even from its trash.
    await store.maintenance.run();
    assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM history_trash')?.n, 0);
    if (compact) await store.db.compact();
    await store.close();
    const file = path.join(dir, HISTORY_FILE_NAME);
    if (relaid) relaidOut(file);
    await overwritePage(file, 1);

    store = await openStore(dir, { recover: true });
    t.after(() => store.close());
    await store.messages.append(message('kept', 'after', 'written after the rebuild', BULKY_NOW + 100));
    assert.ok(keyOf(store, 'after') > highest, `the new body's key ${keyOf(store, 'after')} is above ${highest}, given before`);
    const kept = served(await store.messages.recent('kept'));
    assert.deepEqual(kept.at(-1), ['after', 'written after the rebuild']);
    assert.deepEqual(
      kept.slice(0, -1).map(([id]) => id),
      ['k0', 'k1', 'k2'],
    );
  });
}

/**
 * A history.db left by a crash: its WAL holds a commit that does not touch page 1 (a body rewritten in
 * place: `NEW 3` for `new 3`, the WAL's only copy), and page 1 of the file is overwritten. SQLite opens a
 * WAL it finds beside a file before it reads page 1, and closing that connection checkpoints the WAL into
 * the file: the refused open used to write the WAL's pages into the damaged file and delete the WAL.
 */
test("page 1 overwritten while the WAL holds a commit (a crash): the refused open leaves the file and its WAL as they were; --recover serves the WAL's commit", LIMIT, async (t) => {
  const dir = await closedStore(t);
  const file = path.join(dir, HISTORY_FILE_NAME);
  // What a crash leaves: the WAL of a connection still open (closing it would checkpoint and delete it).
  const crashed = await withDir(t);
  for (const name of await readdir(dir)) if (!name.includes('lock') && name !== HISTORY_FILE_NAME) await cp(path.join(dir, name), path.join(crashed, name), { recursive: true });
  const writer = new SqliteFile(file);
  try {
    writer.exec('PRAGMA locking_mode = EXCLUSIVE');
    writer.run("UPDATE bodies SET content = 'NEW 3' WHERE content = 'new 3'");
    await cp(file, path.join(crashed, HISTORY_FILE_NAME));
    await cp(`${file}-wal`, path.join(crashed, `${HISTORY_FILE_NAME}-wal`));
  } finally {
    writer.close();
  }
  const copied = path.join(crashed, HISTORY_FILE_NAME);
  assert.ok((await readFile(`${copied}-wal`)).includes('NEW 3'), 'the WAL holds the rewritten body');
  assert.ok(!(await readFile(copied)).includes('NEW 3'), 'the file does not');
  await overwritePage(copied, 1);
  const before = [await digest(copied), await digest(`${copied}-wal`)];

  await assert.rejects(openStore(crashed), /history\.db is damaged \(.*\).*serve --recover/s);
  assert.deepEqual([await digest(copied), await digest(`${copied}-wal`)], before, 'a refused open changes neither the file nor its WAL');

  const store = await openStore(crashed, { recover: true });
  t.after(() => store.close());
  assert.match(String(await store.problem()), /history\.db was damaged .* rebuilt by --recover/);
  // The WAL's commit, read through the new page 1 with the WAL beside it.
  assert.deepEqual(
    served(await store.messages.recent('new', { limit: 100 })),
    ['new 0', 'new 1', 'new 2', 'NEW 3', 'new 4'].map((content, i) => [`n${i}`, content]),
  );
  assert.equal((await store.messages.recent('old', { limit: 1000 })).filter((m) => m.content === bulkyContent(Number(m.id.slice(1)))).length, 200);
  const kept = await asides(crashed);
  assert.equal(kept.length, 1, kept.join(', '));
  assert.deepEqual([await digest(path.join(crashed, kept[0], HISTORY_FILE_NAME)), await digest(path.join(crashed, kept[0], `${HISTORY_FILE_NAME}-wal`))], before, 'kept aside as they were');
});
