// Cold conversations (the least recently active, beyond the `hotMessages` sql.js keeps): their messages'
// metadata moves out of sql.js (all in memory) into history.db (issue 25), so the memory of an open stops growing with the history; every read, search,
// retention, deletion and a crash in the middle of a move keep working. Real files, real child processes.
import assert from 'node:assert/strict';
import { open as openFile, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Database as SqliteFile } from 'node-sqlite3-wasm';
import { HISTORY_FILE_NAME, LOST_BODY_TEXT, MIGRATIONS, openStore, clientKeyOf } from '../../src/store/index';
import type { NewMessage, Store } from '../../src/store/index';
import { BULKY_NOW, bulkyContent, spawnStoreChild, tempDir } from '../helpers/store-utils';

const LIMIT = { timeout: 120_000 };
const DAY = 86_400_000;
const OLD = BULKY_NOW - 30 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();

async function withDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { dir, cleanup } = await tempDir('cold-history-test-');
  t.after(cleanup);
  return dir;
}

/** Turns of four: a user message (with a client key), the assistant's text, a 3 KB tool output, the reply. */
function messageOf(c: string, i: number): NewMessage {
  const role = (['user', 'assistant', 'tool', 'assistant'] as const)[i % 4];
  const content = role === 'tool' ? `output ${c}-${i} ${'t'.repeat(3000)}` : `text ${c}-${i} word${c}x${i}`;
  return {
    id: `${c}-${i}`,
    conversation_id: c,
    role,
    content,
    timestamp: iso(OLD + i * 1000),
    ...(role === 'user' ? { client_key: clientKeyOf('owner', `${c}-${i}`) } : {}),
    ...(role === 'tool' ? { tool_name: 'read_file', data: { kind: 'result', call_id: `${c}-${i}`, ok: true } } : {}),
  };
}

async function fill(store: Store, conversations: number, per: number): Promise<void> {
  for (let c = 0; c < conversations; c++) {
    await store.conversations.create({ id: `c${c}`, title: `c${c}`, source: 'ws', created_at: iso(OLD) });
    for (let i = 0; i < per; i += 200) await store.messages.appendMany(Array.from({ length: Math.min(200, per - i) }, (_, k) => messageOf(`c${c}`, i + k)));
  }
}

/** Pages of sql.js' database in use (free pages left out: the compactor drops them from the snapshot). */
function usedPages(store: Store): number {
  const pages = store.db.get<{ page_count: number }>('PRAGMA page_count')?.page_count ?? 0;
  const free = store.db.get<{ freelist_count: number }>('PRAGMA freelist_count')?.freelist_count ?? 0;
  return pages - free;
}

const hotRows = (store: Store) => store.db.get<{ n: number }>('SELECT count(*) AS n FROM messages')?.n ?? 0;

test('the least recently active conversations leave sql.js: its database does not grow with their messages', LIMIT, async (t) => {
  const used: number[] = [];
  let before = 0;
  for (const per of [20, 400]) {
    const store = await openStore(await withDir(t), { hotMessages: 0 });
    t.after(() => store.close());
    await fill(store, 5, per);
    before = usedPages(store);
    await store.maintenance.run();
    assert.equal(hotRows(store), 0, 'no message of a cold conversation left in sql.js');
    assert.equal(store.messages.count(), 5 * per);
    assert.equal(store.messages.count('c3'), per);
    used.push(usedPages(store));
  }
  // 1,900 more messages held about 60 pages of sql.js (4 KiB each) before the move; none after.
  assert.ok(before - used[1] > 40, `the move freed sql.js pages: ${before} -> ${used[1]}`);
  assert.ok(used[1] - used[0] <= 2, `sql.js pages with 100 messages: ${used[0]}, with 2,000: ${used[1]}`);
});

test('cold messages read as before: recent, after, get, client key, reply, turn of undo, search, export; a new message joins them', LIMIT, async (t) => {
  const store = await openStore(await withDir(t), { hotMessages: 10 });
  t.after(() => store.close());
  await fill(store, 3, 120);
  await store.conversations.create({ id: 'active', title: 'active', source: 'ws', created_at: iso(BULKY_NOW) });
  await store.messages.append({ ...messageOf('active', 0), timestamp: iso(BULKY_NOW) });
  await store.maintenance.run();
  // Down to 90% of the budget, least recently active first: c0 and c1 whole, c2 but its last 8 rows.
  assert.equal(hotRows(store), 9);
  assert.deepEqual(
    store.db.all<{ id: string }>('SELECT id FROM messages ORDER BY seq').map((r) => r.id),
    ['c2-112', 'c2-113', 'c2-114', 'c2-115', 'c2-116', 'c2-117', 'c2-118', 'c2-119', 'active-0'],
  );
  const split = await store.messages.recent('c2', { limit: 1000, includeTools: true });
  assert.deepEqual(
    split.map((m) => m.id),
    Array.from({ length: 120 }, (_, i) => `c2-${i}`),
    'a conversation split between history.db and sql.js reads whole, in order',
  );
  assert.equal((await store.messages.replyTo(split[112]))?.id, 'c2-115');
  assert.equal((await store.messages.replyTo(split[108]))?.id, 'c2-111');
  // undo_turn's lookups (agent/turn-undo.ts): a message's turn, a turn's reply, cold or split.
  assert.equal(await store.messages.turnOf('c0', 'c0-10'), 'c0-8');
  assert.equal(await store.messages.replyOfTurn('c0', 'c0-8'), 'c0-11');
  assert.equal(await store.messages.turnOf('c2', 'c2-110'), 'c2-108');
  assert.equal(await store.messages.turnOf('c2', 'c2-114'), 'c2-112');
  assert.equal(await store.messages.turnOf('c1', 'c0-10'), undefined, 'not of this conversation');

  const all = await store.messages.recent('c1', { limit: 1000, includeTools: true });
  assert.deepEqual(
    all.map((m) => m.id),
    Array.from({ length: 120 }, (_, i) => `c1-${i}`),
  );
  for (const m of all) assert.equal(m.content, messageOf('c1', Number(m.id.split('-')[1])).content);
  assert.deepEqual(all[2].data, { kind: 'result', call_id: 'c1-2', ok: true });
  const last = await store.messages.recent('c1', { limit: 3 });
  assert.deepEqual(
    last.map((m) => m.id),
    ['c1-116', 'c1-117', 'c1-119'],
  );
  assert.deepEqual(
    (await store.messages.after('c1', all[99].seq)).map((m) => m.id),
    all.slice(100).map((m) => m.id),
  );
  assert.equal((await store.messages.get('c2-5'))?.content, messageOf('c2', 5).content);
  const asked = await store.messages.byClientKey(clientKeyOf('owner', 'c0-8'));
  assert.equal(asked?.id, 'c0-8');
  assert.equal((await store.messages.replyTo(asked!))?.id, 'c0-11');
  const hits = await store.messages.search('wordc2x41');
  assert.deepEqual(
    hits.map((h) => [h.message_id, h.conversation_id]),
    [['c2-41', 'c2']],
  );

  // A new message in a cold conversation: after the cold rows, in order; its turn's reply found across both.
  await store.messages.append({ ...messageOf('c1', 120), timestamp: iso(BULKY_NOW) });
  await store.messages.append({ ...messageOf('c1', 121), timestamp: iso(BULKY_NOW) });
  assert.deepEqual(
    (await store.messages.recent('c1', { limit: 3 })).map((m) => m.id),
    ['c1-119', 'c1-120', 'c1-121'],
  );
  assert.deepEqual(
    (await store.messages.after('c1', all[118].seq)).map((m) => m.id),
    ['c1-119', 'c1-120', 'c1-121'],
  );
  assert.equal((await store.messages.replyTo((await store.messages.get('c1-120'))!))?.id, 'c1-121');
  assert.equal(store.messages.count('c1'), 122);
  await store.maintenance.run();
  assert.ok(hotRows(store) <= 10);
  assert.deepEqual(
    (await store.messages.recent('c1', { limit: 3 })).map((m) => m.id),
    ['c1-119', 'c1-120', 'c1-121'],
  );
});

test('retention and deletion reach cold messages: old tool outputs cut, a deleted conversation leaves nothing in history.db', LIMIT, async (t) => {
  const store = await openStore(await withDir(t), { now: () => BULKY_NOW, hotMessages: 0 });
  t.after(() => store.close());
  await fill(store, 3, 40);
  await store.maintenance.run();
  assert.equal(hotRows(store), 0);
  const bytesOf = (id: string) => store.db.get<{ bytes: number }>('SELECT bytes FROM conversations WHERE id = ?', [id])?.bytes ?? 0;
  const before = bytesOf('c0');

  store.maintenance.setPolicy({ toolOutputDays: 7 });
  await store.maintenance.run();
  const tool = (await store.messages.recent('c0', { limit: 100, includeTools: true })).filter((m) => m.role === 'tool');
  assert.equal(tool.length, 10);
  for (const m of tool) assert.ok(m.content.endsWith('[cut: tool output older than 7 days]'), `${m.id} cut`);
  assert.ok(bytesOf('c0') < before - 10 * 2000, `the conversation's bytes follow the cut: ${before} -> ${bytesOf('c0')}`);

  const { maxKey } = await store.history.stats();
  assert.equal(await store.conversations.delete('c1'), true);
  await store.maintenance.run();
  assert.equal(await store.messages.get('c1-3'), undefined);
  assert.deepEqual(await store.history.cold({ kind: 'recent', conversationId: 'c1', maxSeq: Number.MAX_SAFE_INTEGER, limit: 10, includeTools: true }), []);
  // Every body left is a cold message's of c0 or c2 (keysBetween lists only bodies no cold row refers to).
  assert.deepEqual(await store.history.keysBetween(1, maxKey), []);
  assert.equal(store.messages.count(), 80);
  assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM history_cold_trash')?.n, 0);
});

test('a crash between history.db taking the rows and sql.js letting them go: the next pass moves them again, each read once', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir, {});
  await fill(store, 2, 60);
  // The move's first step alone, as a kill after it would leave it: rows in history.db and still in sql.js.
  const rows = store.db.all<Parameters<Store['history']['putCold']>[0][number]>(
    "SELECT seq, id, conversation_id, role, timestamp, tool_name, user_id, client_key, body_key, bytes, cut FROM messages WHERE conversation_id = 'c0'",
  );
  await store.history.putCold(rows);
  await store.close();

  store = await openStore(dir, { hotMessages: 0 });
  t.after(() => store.close());
  const ids = async () => (await store.messages.recent('c0', { limit: 1000, includeTools: true })).map((m) => m.id);
  const expected = Array.from({ length: 60 }, (_, i) => `c0-${i}`);
  assert.deepEqual(await ids(), expected, 'before the pass: once each');
  await store.maintenance.run();
  assert.equal(hotRows(store), 0);
  assert.deepEqual(await ids(), expected, 'after the pass: once each');
  assert.equal((await store.messages.get('c0-7'))?.content, messageOf('c0', 7).content);
  assert.equal(store.messages.count(), 120);
});

test("migration 18: SIGKILL while an existing database's metadata moves to history.db; the next open finishes, every message once", { timeout: 180_000 }, async (t) => {
  const dir = await withDir(t);
  // A store as schema 17 wrote it: every message's metadata in sql.js, its body in history.db.
  const conversations = 12;
  const per = 600;
  let store = await openStore(dir, { migrations: MIGRATIONS.slice(0, 17) });
  for (let c = 0; c < conversations; c++) {
    const id = `c${c}`;
    await store.conversations.create({ id, title: id, source: 'ws', created_at: iso(OLD) });
    for (let i = 0; i < per; i += 300) {
      const messages = Array.from({ length: 300 }, (_, k) => messageOf(id, i + k));
      const bodies = await store.messages.putBodies(messages);
      await store.db.write((tx) => {
        messages.forEach((m, k) =>
          tx.run('INSERT INTO messages (id, conversation_id, role, content, timestamp, tool_name, user_id, data, client_key, body_key, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [
            m.id,
            id,
            m.role,
            '',
            m.timestamp,
            m.tool_name ?? null,
            null,
            null,
            m.client_key ?? null,
            bodies[k].key,
            Buffer.byteLength(m.content),
          ]),
        );
        tx.run('UPDATE conversations SET updated_at = ? WHERE id = ?', [messages[messages.length - 1].timestamp, id]);
        tx.keepBodies(bodies);
      });
    }
  }
  await store.close();
  const total = conversations * per;

  const child = spawnStoreChild('cool', dir);
  t.after(() => {
    child.proc.kill('SIGKILL');
  });
  const hot = (l: string) => Number(l.split(' ')[1]);
  await child.waitFor((lines) => lines.some((l) => l.startsWith('hot ') && hot(l) > 0 && hot(l) < total), 90_000);
  child.proc.kill('SIGKILL');
  await child.exited;
  const seen = child.lines.filter((l) => l.startsWith('hot ')).map(hot);
  assert.ok(
    seen.some((n) => n > 0 && n < total),
    `killed midway: ${JSON.stringify(seen.slice(-3))}`,
  );

  store = await openStore(dir, { hotMessages: 0 });
  t.after(() => store.close());
  const check = async () => {
    for (let c = 0; c < conversations; c++) {
      const rows = await store.messages.after(`c${c}`, 0);
      assert.deepEqual(
        rows.map((m) => m.id),
        Array.from({ length: per }, (_, i) => `c${c}-${i}`),
        `c${c}: every message once, in order`,
      );
      for (const m of rows) assert.equal(m.content, messageOf(`c${c}`, Number(m.id.split('-')[1])).content);
    }
    assert.equal(store.messages.count(), total);
  };
  await check();
  await store.maintenance.run();
  assert.equal(hotRows(store), 0, 'every row moved');
  await check();
  assert.equal((await store.messages.search('wordc11x599')).length, 1);
});

test('a damaged history.db holding cold messages: a read serves the placeholder for what it cannot read, --recover rebuilds the rest with them', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir, { hotMessages: 0 });
  await store.conversations.create({ id: 'old', title: 'old', source: 'ws', created_at: iso(OLD) });
  for (let batch = 0; batch < 10; batch++) {
    await store.messages.appendMany(
      Array.from({ length: 20 }, (_, j) => ({ id: `o${batch * 20 + j}`, conversation_id: 'old', role: 'user' as const, content: bulkyContent(batch * 20 + j), timestamp: iso(OLD + batch * 20 + j) })),
    );
  }
  await store.maintenance.run();
  assert.equal(hotRows(store), 0);
  await store.close();

  // A body's page a tenth into the file overwritten (as history-damage.test.ts does); the cold rows were
  // written last, at the end of the file.
  const file = path.join(dir, HISTORY_FILE_NAME);
  const fh = await openFile(file, 'r+');
  await fh.write(Buffer.alloc(4096, 0xff), 0, 4096, Math.floor((await stat(file)).size / 4096 / 10) * 4096);
  await fh.close();
  store = await openStore(dir);
  const old = await store.messages.recent('old', { limit: 1000 });
  assert.equal(old.length, 200, 'every cold message of the conversation is served');
  const lost = old.filter((m) => m.content === LOST_BODY_TEXT).map((m) => m.id);
  assert.ok(lost.length >= 1 && lost.length < 20, `${lost.length} messages lost`);
  assert.match(String(await store.problem()), /history\.db is damaged/);
  await store.close();

  await assert.rejects(openStore(dir), /serve --recover/);
  store = await openStore(dir, { recover: true });
  assert.match(String(await store.problem()), new RegExp(`rebuilt by --recover: ${200 - lost.length} bodies read back, ${lost.length} lost`));
  await store.close();
  store = await openStore(dir);
  t.after(() => store.close());
  assert.equal(await store.problem(), null);
  const rebuilt = await store.messages.recent('old', { limit: 1000 });
  assert.deepEqual(
    rebuilt.map((m) => m.id),
    old.map((m) => m.id),
  );
  assert.deepEqual(
    rebuilt.filter((m) => m.content === LOST_BODY_TEXT).map((m) => m.id),
    lost,
  );
  for (const m of rebuilt) if (m.content !== LOST_BODY_TEXT) assert.equal(m.content, bulkyContent(Number(m.id.slice(1))));
  assert.equal(store.messages.count('old'), 200);
});

test('a history.db replaced by a copy older than a move: the store opens, says on /health how many messages were lost, counts what remains', LIMIT, async (t) => {
  const dir = await withDir(t);
  const file = path.join(dir, HISTORY_FILE_NAME);
  let store = await openStore(dir);
  await fill(store, 2, 40);
  await store.close();
  // The copy a user keeps (closed: its WAL is checkpointed), then c0 and c1 move to history.db.
  const old = await readFile(file);
  store = await openStore(dir, { hotMessages: 0 });
  await store.maintenance.run();
  assert.equal(hotRows(store), 0);
  await store.close();
  await writeFile(file, old);
  await rm(`${file}-wal`, { force: true });

  store = await openStore(dir, { hotMessages: 0 });
  t.after(() => store.close());
  assert.match(String(await store.problem()), /80 messages of 2 conversations .* are lost/);
  assert.equal(store.messages.count('c0'), 0, 'the count agrees with what can be read');
  assert.deepEqual(await store.messages.recent('c0'), []);
  // The conversations stay usable: a new message lands and reads back.
  await store.messages.append({ ...messageOf('c0', 100), timestamp: iso(BULKY_NOW) });
  assert.deepEqual(
    (await store.messages.recent('c0')).map((m) => m.id),
    ['c0-100'],
  );
  assert.equal(store.messages.count('c0'), 1);
});

test("cold rows on a damaged page (cold_messages' root): --recover says how many messages were lost whole, counts what it serves, and the next open raises no false notice", LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir, { hotMessages: 0 });
  await fill(store, 2, 40);
  await store.maintenance.run();
  assert.equal(hotRows(store), 0);
  await store.close();
  const file = path.join(dir, HISTORY_FILE_NAME);
  const reading = new SqliteFile(file, { readOnly: true });
  reading.exec('PRAGMA locking_mode = EXCLUSIVE');
  const page = Number(reading.get("SELECT rootpage FROM sqlite_master WHERE name = 'cold_messages'")?.rootpage);
  reading.close();
  const fh = await openFile(file, 'r+');
  await fh.write(Buffer.alloc(4096, 0xff), 0, 4096, (page - 1) * 4096);
  await fh.close();

  // A read meets the damage first (the open's check reads bodies, not cold rows); then --recover.
  store = await openStore(dir, { hotMessages: 0 });
  await assert.rejects(store.messages.recent('c0'), /malformed/);
  await store.close();
  store = await openStore(dir, { recover: true, hotMessages: 0 });
  // Said before: "0 bodies read back, 0 lost", while c0 and c1 served nothing and counted 40 each.
  assert.match(String(await store.problem()), /80 messages of 2 conversations whose rows were on its damaged pages are lost whole/);
  assert.equal(store.messages.count('c0'), (await store.messages.recent('c0', { limit: 100 })).length);
  await store.close();
  store = await openStore(dir, { hotMessages: 0 });
  t.after(() => store.close());
  assert.equal(await store.problem(), null, 'no notice of an older copy at the next open');
  // The conversations stay usable.
  await store.messages.append({ ...messageOf('c0', 100), timestamp: iso(BULKY_NOW) });
  assert.equal(store.messages.count('c0'), 1);
});
