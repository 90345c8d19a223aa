// history.db: message bodies out of sql.js (file-backed SQLite in a worker), their ordering with the
// journal, search, retention and freeing space, with real files and real child processes killed -9.
import assert from 'node:assert/strict';
import { readdir, stat, writeFile, open as openFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Database, MIGRATIONS, migrate, openStore, HISTORY_FILE_NAME } from '../../src/store/index';
import type { MessageRow, NewMessage, Store } from '../../src/store/index';
import { ServiceError } from '../../src/protocol/errors';
import { BULKY_NOW, bulkyContent, captureLogger, spawnStoreChild, tempDir } from '../helpers/store-utils';

const LIMIT = { timeout: 60_000 };
const DAY = 86_400_000;

async function withDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { dir, cleanup } = await tempDir('history-test-');
  t.after(cleanup);
  return dir;
}

const iso = (ms: number) => new Date(ms).toISOString();

async function conversation(store: Store, id: string, createdMs = 0): Promise<void> {
  await store.conversations.create({ id, title: id, source: 'ws', created_at: iso(createdMs) });
}

function message(conversationId: string, id: string, content: string, ms: number, role: NewMessage['role'] = 'user'): NewMessage {
  return { id, conversation_id: conversationId, role, content, timestamp: iso(ms), ...(role === 'tool' ? { tool_name: 'read_file', data: { kind: 'result', call_id: id, ok: true } } : {}) };
}

/** Every message of every conversation, bodies included (throws if a stored message has no body). */
async function everything(store: Store): Promise<MessageRow[]> {
  const out: MessageRow[] = [];
  for (const c of store.conversations.list({ limit: 10_000 })) out.push(...(await store.messages.recent(c.id, { limit: 100_000, includeTools: true })));
  return out;
}

/** Bodies in history.db that no message refers to (must be none once maintenance has run). */
async function unreferencedBodies(store: Store): Promise<number> {
  const { maxKey } = await store.history.stats();
  const keys = await store.history.keysBetween(1, maxKey);
  const referenced = store.db.get<{ n: number }>('SELECT count(*) AS n FROM messages WHERE body_key IS NOT NULL')?.n ?? 0;
  return keys.length - referenced;
}

test('message bodies live in history.db: the sql.js snapshot and journal keep only metadata', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await conversation(store, 'c');
  await store.db.compact();
  const sqlJsSize = async () => {
    let bytes = 0;
    for (const f of (await readdir(dir)).filter((n) => n.startsWith('service.db'))) bytes += (await stat(path.join(dir, f))).size;
    return bytes;
  };
  const empty = await sqlJsSize();
  for (let i = 0; i < 40; i++) await store.messages.append(message('c', `m${i}`, bulkyContent(i), 1000 + i, i % 4 === 3 ? 'tool' : 'user'));
  const bodyBytes = Array.from({ length: 40 }, (_, i) => Buffer.byteLength(bulkyContent(i))).reduce((a, b) => a + b, 0);
  await store.db.compact();
  await store.close();

  const grown = (await sqlJsSize()) - empty;
  assert.ok(grown < bodyBytes / 20, `service.db and its journal grew by ${grown} bytes for ${bodyBytes} bytes of bodies`);
  assert.ok((await stat(path.join(dir, HISTORY_FILE_NAME))).size > bodyBytes, 'history.db holds the bodies');

  store = await openStore(dir);
  t.after(() => store.close());
  const rows = await store.messages.recent('c', { limit: 100, includeTools: true });
  assert.deepEqual(
    rows.map((m) => m.content),
    Array.from({ length: 40 }, (_, i) => bulkyContent(i)),
  );
  assert.deepEqual(rows[3].data, { kind: 'result', call_id: 'm3', ok: true });
  assert.equal(store.conversations.get('c')?.last_message, previewLine(bulkyContent(38)), 'the preview is on the conversation row');
});

/** Runs the bulky writer child until `acks` messages are acknowledged, kills it -9; the acknowledged ids. */
async function killBulkyWriter(t: { after: (fn: () => void) => void }, dir: string, acks: number, mode: 'bulky' | 'bulky-segments' = 'bulky'): Promise<string[]> {
  const child = spawnStoreChild(mode, dir);
  t.after(() => {
    child.proc.kill('SIGKILL');
  });
  await child.waitFor((l) => l.filter((x) => /^m\d+$/.test(x)).length >= acks, 60_000);
  child.proc.kill('SIGKILL');
  assert.equal((await child.exited).signal, 'SIGKILL');
  return child.lines.filter((l) => /^m\d+$/.test(l));
}

function previewLine(text: string): string {
  return text.split('\n')[0].slice(0, 120);
}

/** One kill -9 of the bulky writer and a restart: every acknowledged message whole; whether the restart put bodies back from the journal. */
async function killAndCheck(t: { after: (fn: () => void) => void }, mode: 'bulky' | 'bulky-segments'): Promise<{ restored: boolean }> {
  const dir = await withDir(t);
  const acked = await killBulkyWriter(t, dir, 60, mode);

  const { logger, lines } = captureLogger();
  const store = await openStore(dir, { logger });
  try {
    const byId = new Map((await everything(store)).map((m) => [m.id, m]));
    for (const id of acked) assert.equal(byId.get(id)?.content, bulkyContent(Number(id.slice(1))), `acknowledged ${id} is whole`);
    for (const m of byId.values()) assert.equal(m.content, bulkyContent(Number(m.id.slice(1))), `${m.id} (stored, maybe not acknowledged) has its whole body`);
    await store.maintenance.run();
    assert.equal(await unreferencedBodies(store), 0, 'bodies whose message never landed are swept');
    assert.equal(
      lines.some((l) => l.level === 'error'),
      false,
      JSON.stringify(lines.filter((l) => l.level === 'error')),
    );
    return { restored: lines.some((l) => l.event === 'history.bodies_restored') };
  } finally {
    await store.close();
  }
}

test('SIGKILL while writing bulky messages, compactions running: every acknowledged message is whole after restart, none without its body', { timeout: 90_000 }, async (t) => {
  await killAndCheck(t, 'bulky');
});

// The review's variant: with the default segments nothing sends held bodies early, so a kill can meet a
// group the worker has not yet committed; whether it does depends on the moment (about half the kills
// here), so it is repeated until one restart had to put bodies back from the journal.
test('SIGKILL while writing bulky messages, default journal segments: a kill that meets bodies history.db lacks loses none of them', { timeout: 240_000 }, async (t) => {
  const attempts: boolean[] = [];
  while (attempts.length < 10 && !attempts.includes(true)) attempts.push((await killAndCheck(t, 'bulky-segments')).restored);
  assert.ok(attempts.includes(true), `no kill of ${attempts.length} met a group history.db lacked: the variant tested only the ordinary path`);
});

test('search: every word, the last as a prefix, diacritics folded, newest first, one conversation, typed FTS syntax inert', LIMIT, async (t) => {
  const dir = await withDir(t);
  const store = await openStore(dir);
  t.after(() => store.close());
  await conversation(store, 'a');
  await conversation(store, 'b');
  await store.messages.appendMany([
    message('a', 'a1', 'Le café est prêt, said the barista', 1000),
    message('a', 'a2', 'The deployment failed: disk quota exceeded', 2000, 'assistant'),
    message('a', 'a3', 'deployment failed again (quota) "quoted" OR NEAR', 3000),
    message('a', 'a4', 'deployment log: failed quota in the tool output', 4000, 'tool'),
    message('b', 'b1', 'Another deployment, nothing failed', 5000),
  ]);

  const hits = await store.messages.search('deployment quo');
  assert.deepEqual(
    hits.map((h) => h.message_id),
    ['a3', 'a2'],
    'both words, "quo" as a prefix, newest first; tool outputs are not searched',
  );
  const [top] = hits;
  assert.equal(top.conversation_id, 'a');
  assert.equal(top.role, 'user');
  assert.equal(top.timestamp, iso(3000));
  assert.equal(typeof top.seq, 'number');
  assert.deepEqual(
    top.highlights.map(([s, e]) => top.snippet.slice(s, e).toLowerCase()),
    ['deployment', 'quota', 'quoted'],
  );

  assert.deepEqual(
    (await store.messages.search('cafe pret')).map((h) => h.message_id),
    ['a1'],
    'diacritics folded',
  );
  assert.deepEqual(
    (await store.messages.search('DEPLOYMENT', { conversationId: 'b' })).map((h) => h.message_id),
    ['b1'],
  );
  assert.deepEqual(
    (await store.messages.search('deployment', { limit: 2 })).map((h) => h.message_id),
    ['b1', 'a3'],
  );
  assert.deepEqual(
    (await store.messages.search('"quoted" OR')).map((h) => h.message_id),
    ['a3'],
    'quotes and OR are words here',
  );
  assert.deepEqual(
    (await store.messages.search('NEAR( deployment')).map((h) => h.message_id),
    ['a3'],
    '"NEAR(" is the word "near" here, not an operator',
  );
  for (const bad of ['', '   ', '*** ()']) {
    await assert.rejects(store.messages.search(bad), (err: unknown) => err instanceof ServiceError && err.code === 'invalid_request' && /search query/.test(err.message));
  }
  // A deleted conversation's messages are not found any more.
  await store.conversations.delete('b');
  assert.deepEqual(
    (await store.messages.search('nothing')).map((h) => h.message_id),
    [],
  );
});

test('retention: tool outputs older than tool_output_days are cut, conversations idle over max_days deleted, then the oldest over max_bytes', LIMIT, async (t) => {
  const dir = await withDir(t);
  let now = BULKY_NOW;
  const store = await openStore(dir, { now: () => now });
  t.after(() => store.close());
  const old = BULKY_NOW - 40 * DAY;
  const recent = BULKY_NOW - 10 * DAY;
  await conversation(store, 'old', old);
  await store.messages.appendMany([message('old', 'o1', 'old question', old), message('old', 'o2', bulkyContent(1), old + 1, 'tool')]);
  await conversation(store, 'mid', recent);
  await store.messages.appendMany([message('mid', 'm1', 'mid question', recent), message('mid', 'm2', bulkyContent(2), recent + 1, 'tool'), message('mid', 'm3', 'short tool', recent + 2, 'tool')]);
  await conversation(store, 'new', BULKY_NOW - DAY);
  await store.messages.appendMany([message('new', 'n1', 'new question', BULKY_NOW - DAY), message('new', 'n2', bulkyContent(3), BULKY_NOW - DAY + 1, 'tool')]);

  store.maintenance.setPolicy({ toolOutputDays: 7 });
  await store.maintenance.run();
  const cut = await store.messages.get('m2');
  assert.ok(cut && cut.content.length < 1000 && cut.content.startsWith(bulkyContent(2).slice(0, 400)), 'cut to its beginning');
  assert.match(cut.content, /\[cut: tool output older than 7 days\]/);
  assert.deepEqual(cut.data, { kind: 'result', call_id: 'm2', ok: true }, 'the result data (call id) is kept');
  assert.equal((await store.messages.get('m3'))?.content, 'short tool', 'a short output is left whole');
  assert.equal((await store.messages.get('n2'))?.content, bulkyContent(3), 'a recent output is left whole');

  store.maintenance.setPolicy({ toolOutputDays: 7, maxDays: 30 });
  await store.maintenance.run();
  assert.deepEqual(
    store.conversations.list({ limit: 10 }).map((c) => c.id),
    ['new', 'mid'],
  );
  assert.equal(await store.messages.get('o1'), undefined);

  // max_bytes: the newest conversation alone fits; the older one goes.
  const newBytes = store.db.get<{ bytes: number }>("SELECT bytes FROM conversations WHERE id = 'new'")!.bytes;
  store.maintenance.setPolicy({ maxBytes: newBytes });
  now += DAY;
  await store.maintenance.run();
  assert.deepEqual(
    store.conversations.list({ limit: 10 }).map((c) => c.id),
    ['new'],
  );
  assert.equal(store.messages.count(), 2);
  assert.equal(await unreferencedBodies(store), 0, "the deleted messages' bodies are freed");
});

test('delete_conversation really frees the space: rows and bodies deleted, history.db shrinks on disk', LIMIT, async (t) => {
  const dir = await withDir(t);
  const store = await openStore(dir);
  t.after(() => store.close());
  await conversation(store, 'keep');
  await store.messages.append(message('keep', 'k1', 'kept', 1));
  await conversation(store, 'big');
  for (let i = 0; i < 100; i++) await store.messages.append(message('big', `b${i}`, bulkyContent(i), 10 + i, 'tool'));
  // An append does not wait for the history worker (its journal record holds the body): the size is read
  // once the worker has written every body. On disk: the file and its WAL, where the bodies are until a
  // checkpoint (fewer, larger transactions write fewer WAL frames, so the automatic one may not have come).
  await store.history.answered();
  const file = path.join(dir, HISTORY_FILE_NAME);
  const onDisk = async () =>
    (await stat(file)).size +
    (await stat(`${file}-wal`).then(
      (s) => s.size,
      () => 0,
    ));
  const before = await onDisk();

  assert.equal(await store.conversations.delete('big'), true);
  await store.maintenance.run();
  const after = await onDisk();
  assert.ok(after < before / 4, `history.db went from ${before} to ${after} bytes`);
  assert.equal(store.messages.count(), 1);
  assert.equal(await unreferencedBodies(store), 0);
  assert.equal((await store.messages.get('k1'))?.content, 'kept');
});

function assertWholeOrCut(m: MessageRow, original: string): void {
  if (m.content === original) return;
  assert.equal(m.role, 'tool', `${m.id} changed but is not a tool output`);
  assert.ok(m.content.startsWith(original.slice(0, 400)) && m.content.endsWith('[cut: tool output older than 7 days]'), `${m.id} cut properly`);
}

/** An older database (schema before history.db): bodies inline in sql.js. */
async function oldDatabase(dir: string, conversations: { id: string; ms: number; messages: number }[]): Promise<Map<string, string>> {
  const db = await Database.open(dir);
  const contents = new Map<string, string>();
  await migrate(db, MIGRATIONS.slice(0, 6));
  let n = 0;
  for (const c of conversations) {
    await db.write((tx) => {
      tx.run('INSERT INTO conversations (id, title, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [c.id, c.id, 'ws', iso(c.ms), iso(c.ms)]);
      for (let i = 0; i < c.messages; i++, n++) {
        const id = `${c.id}-${i}`;
        const tool = i % 4 === 3;
        contents.set(id, bulkyContent(n));
        tx.run('INSERT INTO messages (id, conversation_id, role, content, timestamp, tool_name, data) VALUES (?, ?, ?, ?, ?, ?, ?)', [
          id,
          c.id,
          tool ? 'tool' : 'user',
          bulkyContent(n),
          iso(c.ms + i),
          tool ? 'read_file' : null,
          tool ? JSON.stringify({ kind: 'result', call_id: id, ok: true }) : null,
        ]);
      }
    });
  }
  await db.close();
  return contents;
}

test("SIGKILL while an old database's bodies move to history.db and retention runs: the next open finishes, nothing kept is lost", { timeout: 120_000 }, async (t) => {
  const dir = await withDir(t);
  const recentMs = BULKY_NOW - 2 * DAY;
  const plan = [
    ...Array.from({ length: 6 }, (_, i) => ({ id: `old${i}`, ms: BULKY_NOW - (60 + i) * DAY, messages: 60 })),
    ...Array.from({ length: 3 }, (_, i) => ({ id: `new${i}`, ms: recentMs + i, messages: 60 })),
  ];
  const contents = await oldDatabase(dir, plan);
  const total = contents.size;

  const child = spawnStoreChild('maintain', dir);
  t.after(() => {
    child.proc.kill('SIGKILL');
  });
  const progress = (l: string) => l.split(' ').slice(1).map(Number) as [number, number];
  // Killed in the middle: some bodies moved and some not, or some old messages deleted and not all.
  const midway = (l: string) => l.startsWith('left ') && ((progress(l)[1] > 0 && progress(l)[1] < total) || (progress(l)[0] > 180 && progress(l)[0] < total));
  await child.waitFor((lines) => lines.some(midway), 60_000);
  child.proc.kill('SIGKILL');
  await child.exited;
  const seen = child.lines.filter((l) => l.startsWith('left ')).map(progress);
  assert.ok(seen.some(([, inline]) => inline > 0 && inline < total) || seen.some(([n]) => n > 180 && n < total), `killed midway: ${JSON.stringify(seen.slice(-3))}`);

  const { logger, lines } = captureLogger();
  const store = await openStore(dir, { logger, retention: { maxDays: 30, toolOutputDays: 7 }, now: () => BULKY_NOW });
  t.after(() => store.close());
  // Before this open's maintenance finishes: everything still stored reads whole (inline or moved),
  // or, for an old tool output, cut by the killed pass.
  for (const m of await everything(store)) assertWholeOrCut(m, contents.get(m.id)!);
  await store.maintenance.run();
  assert.deepEqual(
    store.conversations
      .list({ limit: 100 })
      .map((c) => c.id)
      .sort(),
    ['new0', 'new1', 'new2'],
  );
  const kept = await everything(store);
  assert.equal(kept.length, 180);
  for (const m of kept) assert.equal(m.content, contents.get(m.id), `${m.id} whole after the move`);
  assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM messages WHERE body_key IS NULL')?.n, 0, 'every body moved');
  assert.equal(await unreferencedBodies(store), 0, 'no body left behind by the kill');
  assert.deepEqual((await store.messages.search('message', { conversationId: 'new1', limit: 1 })).length, 1, 'moved bodies are searchable');
  assert.equal(
    lines.some((l) => l.level === 'error'),
    false,
    JSON.stringify(lines.filter((l) => l.level === 'error')),
  );
});

test('history.db damaged: a garbage WAL is ignored, a WAL damaged mid-way (after kill -9) or a destroyed header is refused with a clear error', { timeout: 90_000 }, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await conversation(store, 'c');
  for (let i = 0; i < 20; i++) await store.messages.append(message('c', `m${i}`, bulkyContent(i), i));
  await store.close();

  // Garbage where a WAL would be: no valid header, so SQLite uses none of it.
  const wal = path.join(dir, `${HISTORY_FILE_NAME}-wal`);
  await writeFile(wal, Buffer.alloc(8192, 0x5a));
  store = await openStore(dir);
  assert.deepEqual(
    (await store.messages.recent('c', { limit: 100 })).map((m) => m.content),
    Array.from({ length: 20 }, (_, i) => bulkyContent(i)),
  );
  await store.close();

  // A history.db whose header is destroyed: the open fails naming the file, nothing is served without bodies.
  const fh = await openFile(path.join(dir, HISTORY_FILE_NAME), 'r+');
  await fh.write(Buffer.alloc(100, 0x42), 0, 100, 0);
  await fh.close();
  await assert.rejects(openStore(dir), (err: Error) => err.message.includes(HISTORY_FILE_NAME) && /could not be opened/.test(err.message));
  // The refused open released the directory.
  const db = await Database.open(dir);
  await db.close();

  // Killed while writing: the WAL holds committed bodies; one byte flipped in its middle makes SQLite
  // drop every frame from there on, acknowledged ones included. Never served silently without them.
  // Whether the kill finds the WAL holding that much depends on the moment (the worker's group puts come
  // every 250 ms; a checkpoint may just have emptied it): killed again, in a fresh directory, until it does.
  let dir2 = '';
  let acked: string[] = [];
  let size = 0;
  const sizes: number[] = [];
  for (let attempt = 0; attempt < 8 && size <= 64 * 1024; attempt++) {
    dir2 = await withDir(t);
    acked = await killBulkyWriter(t, dir2, 30 + 10 * attempt);
    size = (await stat(path.join(dir2, `${HISTORY_FILE_NAME}-wal`))).size;
    sizes.push(size);
  }
  assert.ok(size > 64 * 1024, `the WAL holds committed frames after one of the kills (${sizes.join(', ')} bytes)`);
  const wal2 = path.join(dir2, `${HISTORY_FILE_NAME}-wal`);
  const damaged = await openFile(wal2, 'r+');
  await damaged.write(Buffer.from([0xff ^ (size & 0xff)]), 0, 1, Math.floor(size / 3));
  await damaged.close();
  let opened: Store | undefined;
  try {
    opened = await openStore(dir2);
  } catch (err) {
    assert.match(String(err), /history\.db .* is missing message bodies that were acknowledged .*--recover/s);
  }
  t.diagnostic(opened ? 'damaged WAL: every acknowledged body kept' : 'damaged WAL: open refused');
  if (opened) {
    // SQLite kept every acknowledged frame (the flipped byte was in no committed frame's checksum range).
    const byId = new Map((await everything(opened)).map((m) => [m.id, m.content]));
    for (const id of acked) assert.equal(byId.get(id), bulkyContent(Number(id.slice(1))));
    await opened.close();
  }
});

test('the history worker gone: writes fail with a clear server_error and the store reports the problem (/health)', LIMIT, async (t) => {
  const dir = await withDir(t);
  const store = await openStore(dir);
  t.after(() => store.close());
  await conversation(store, 'c');
  assert.equal(await store.problem(), null);
  // As if the thread had crashed (out of memory in the WASM heap, a bug).
  await (store.history as unknown as { channel: { end(): Promise<unknown> } }).channel.end();
  await assert.rejects(
    store.messages.append(message('c', 'm1', 'after the crash', 1)),
    (err: unknown) => err instanceof ServiceError && err.code === 'server_error' && /history worker/.test(err.message),
  );
  assert.match(String(await store.problem()), /history worker/);
  assert.equal(store.messages.count(), 0, 'no message without its body');
});

test("after an old database's bodies moved to history.db, the next compaction shrinks service.db (free pages not kept in memory)", { timeout: 90_000 }, async (t) => {
  const dir = await withDir(t);
  const contents = await oldDatabase(dir, [{ id: 'c', ms: BULKY_NOW, messages: 120 }]);
  const inlineBytes = [...contents.values()].reduce((n, c) => n + Buffer.byteLength(c), 0);
  const store = await openStore(dir);
  t.after(() => store.close());
  await store.maintenance.run();
  await store.db.compact();
  const snapshot = (await stat(path.join(dir, 'service.db'))).size;
  assert.ok(snapshot < inlineBytes / 10, `service.db is ${snapshot} bytes after moving ${inlineBytes} bytes of bodies out`);
  assert.deepEqual(
    (await store.messages.recent('c', { limit: 200, includeTools: true })).map((m) => m.content),
    [...contents.values()],
  );
});
