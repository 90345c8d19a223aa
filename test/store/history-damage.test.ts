// history.db damaged in its middle (a bad sector, a stray write): the open's cheap check does not see
// it, so the read that meets it must: the message reads as the placeholder, the store says degraded and
// notes the damage in the file, the next open refuses it, `recover` rebuilds it from what it still gives.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, open as openFile, readFile, readdir, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Database as SqliteFile } from 'node-sqlite3-wasm';
import { HistoryDb } from '../../src/store/history/history-db';
import { SALVAGE_FAULT_ENV, type SalvageFault } from '../../src/store/history/salvage-aside';
import { HISTORY_FILE_NAME, LOST_BODY_TEXT, openStore } from '../../src/store/index';
import type { NewMessage, Store } from '../../src/store/index';
import { cutSoPagesAreLost } from '../helpers/history-cut';
import { bulkyContent, spawnStoreChild, tempDir } from '../helpers/store-utils';

async function withDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { dir, cleanup } = await tempDir('history-damage-test-');
  t.after(cleanup);
  return dir;
}

async function conversation(store: Store, id: string): Promise<void> {
  await store.conversations.create({ id, title: id, source: 'ws', created_at: new Date(0).toISOString() });
}

function message(conversationId: string, id: string, content: string, ms: number): NewMessage {
  return { id, conversation_id: conversationId, role: 'user', content, timestamp: new Date(ms).toISOString() };
}

test(
  'a read that meets damage in history.db: the message reads as the placeholder, the rest of its conversation is served, and the store reports the damage (/health)',
  { timeout: 90_000 },
  async (t) => {
    const dir = await withDir(t);
    let store = await openStore(dir);
    await conversation(store, 'old');
    await conversation(store, 'new');
    for (let batch = 0; batch < 10; batch++) {
      await store.messages.appendMany(Array.from({ length: 20 }, (_, j) => message('old', `o${batch * 20 + j}`, bulkyContent(batch * 20 + j), batch * 20 + j)));
    }
    for (let i = 0; i < 5; i++) await store.messages.append(message('new', `n${i}`, `new ${i}`, 1000 + i));
    await store.close();

    // One page a tenth into the file (an old body's) overwritten, as a bad sector or a stray write would:
    // the size and the newest bodies checked at open are fine, so the open succeeds.
    const file = path.join(dir, HISTORY_FILE_NAME);
    const pages = (await stat(file)).size / 4096;
    const fh = await openFile(file, 'r+');
    await fh.write(Buffer.alloc(4096, 0xff), 0, 4096, Math.floor(pages / 10) * 4096);
    await fh.close();
    store = await openStore(dir);
    assert.equal(await store.problem(), null);

    const old = await store.messages.recent('old', { limit: 1000 });
    assert.equal(old.length, 200, 'every message of the conversation is served');
    const lost = old.filter((m) => m.content === LOST_BODY_TEXT);
    assert.ok(lost.length >= 1 && lost.length < 20, `${lost.length} messages lost`);
    for (const m of old) if (m.content !== LOST_BODY_TEXT) assert.equal(m.content, bulkyContent(Number(m.id.slice(1))));
    assert.match(String(await store.problem()), /history\.db is damaged/);
    assert.deepEqual(
      (await store.messages.recent('new')).map((m) => m.content),
      ['new 0', 'new 1', 'new 2', 'new 3', 'new 4'],
    );
    await store.close();

    // Noted in the file: the next open refuses it, `recover` rebuilds it (the damaged copy kept aside),
    // and the open after that is clean, with the same messages lost and every other body whole.
    await assert.rejects(openStore(dir), /history\.db is damaged \(a read met damage.*serve --recover/s);
    store = await openStore(dir, { recover: true });
    assert.match(String(await store.problem()), new RegExp(`rebuilt by --recover: ${205 - lost.length} bodies read back, ${lost.length} lost`));
    await store.close();
    assert.ok((await readdir(dir)).some((f) => f.startsWith(`${HISTORY_FILE_NAME}.damaged-`)));
    store = await openStore(dir);
    t.after(() => store.close());
    assert.equal(await store.problem(), null);
    const rebuilt = await store.messages.recent('old', { limit: 1000 });
    assert.deepEqual(
      rebuilt.filter((m) => m.content === LOST_BODY_TEXT).map((m) => m.id),
      lost.map((m) => m.id),
    );
    for (const m of rebuilt) if (m.content !== LOST_BODY_TEXT) assert.equal(m.content, bulkyContent(Number(m.id.slice(1))));
  },
);

/** The history.db of a store of `count` bulky messages in conversation `c`, closed cleanly. */
async function closedWith(t: Parameters<typeof withDir>[0], count: number): Promise<string> {
  const dir = await withDir(t);
  const store = await openStore(dir);
  await conversation(store, 'c');
  for (let i = 0; i < count; i++) await store.messages.append(message('c', `m${i}`, bulkyContent(i), i));
  await store.close();
  return path.join(dir, HISTORY_FILE_NAME);
}

/** A store of 60 bulky messages closed cleanly, its history.db then cut to `cutTo(size)` bytes. */
async function closedAndCut(t: Parameters<typeof withDir>[0], cutTo: (size: number) => number): Promise<string> {
  // A clean close checkpoints the WAL into the file and deletes it: every page is read from the file,
  // whose header still counts the pages cut off (SQLite itself refuses it at the first read).
  const file = await closedWith(t, 60);
  const dir = path.dirname(file);
  assert.equal((await readdir(dir)).includes(`${HISTORY_FILE_NAME}-wal`), false);
  const fh = await openFile(file, 'r+');
  await fh.truncate(cutTo((await stat(file)).size));
  await fh.close();
  return dir;
}

// Cut short after a clean close (no WAL): to half its pages, to one or two, or shorter than its header.
const CUTS: { what: string; cutTo: (size: number) => number; someKept: boolean }[] = [
  { what: 'to half its pages', cutTo: (size) => Math.floor(size / 2 / 4096) * 4096, someKept: true },
  ...[50, 4096, 8192].map((bytes) => ({ what: `to ${bytes} bytes`, cutTo: () => bytes, someKept: false })),
];

for (const { what, cutTo, someKept } of CUTS) {
  test(`history.db cut ${what} after a clean close: refused naming --recover (not "malformed"); \`recover\` rebuilds it from what is left`, { timeout: 90_000 }, async (t) => {
    const dir = await closedAndCut(t, cutTo);
    await assert.rejects(openStore(dir), /history\.db is damaged \(.*cut short\).*serve --recover/s);
    const store = await openStore(dir, { recover: true });
    t.after(() => store.close());
    assert.match(String(await store.problem()), /rebuilt by --recover/);
    const messages = await store.messages.recent('c', { limit: 100 });
    assert.equal(messages.length, 60, 'every message is served');
    const kept = messages.filter((m) => m.content !== LOST_BODY_TEXT);
    // From the pages that are left, and from the journal where it still holds them.
    if (someKept) assert.ok(kept.length > 0, 'bodies are read back');
    for (const m of kept) assert.equal(m.content, bulkyContent(Number(m.id.slice(1))));
    // New messages after the rebuild get keys of their own: written and read back.
    await store.messages.append(message('c', 'after', 'written after the rebuild', 61));
    const again = await store.messages.recent('c', { limit: 100 });
    assert.equal(again.at(-1)?.content, 'written after the rebuild');
  });
}

test('`recover` of a damaged history.db takes the bodies its journal still holds, rather than placeholders for them', { timeout: 90_000 }, async (t) => {
  const running = await withDir(t);
  const store = await openStore(running);
  t.after(() => store.close());
  await conversation(store, 'c');
  for (let i = 0; i < 40; i++) await store.messages.append(message('c', `m${i}`, bulkyContent(i), i));
  await store.db.flush();
  // The directory as a crash would leave it (copied while the store runs: its journal segments hold
  // every body, history.db was never synced since), then history.db's WAL lost and the file cut to half.
  const dir = await copiedWhileRunning(t, running);
  await rm(path.join(dir, `${HISTORY_FILE_NAME}-wal`), { force: true });
  const file = path.join(dir, HISTORY_FILE_NAME);
  const fh = await openFile(file, 'r+');
  await fh.truncate(Math.floor((await stat(file)).size / 2 / 4096) * 4096);
  await fh.close();

  const recovered = await openStore(dir, { recover: true });
  t.after(() => recovered.close());
  assert.match(String(await recovered.problem()), /rebuilt by --recover/);
  const messages = await recovered.messages.recent('c', { limit: 100 });
  assert.equal(messages.length, 40);
  assert.deepEqual(
    messages.filter((m) => m.content !== bulkyContent(Number(m.id.slice(1)))).map((m) => m.id),
    [],
    'every body the journal holds reads back whole',
  );
});

/** A copy of `running`'s files (its locks and blobs aside), as a kill -9 leaves them. */
async function copiedWhileRunning(t: Parameters<typeof withDir>[0], running: string): Promise<string> {
  const dir = await withDir(t);
  for (const name of await readdir(running)) {
    if (name === 'service.lock' || name.endsWith('.lock') || name === 'blobs') continue;
    await copyFile(path.join(running, name), path.join(dir, name));
  }
  return dir;
}

async function digest(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file).catch(() => Buffer.from('absent')))
    .digest('hex');
}

/** The digests of history.db (`file`) and its WAL. */
async function bothDigests(file: string): Promise<string[]> {
  return [await digest(file), await digest(`${file}-wal`)];
}

/**
 * A store's directory as a kill -9 leaves it: `count` bulky messages in conversation 'c', history.db
 * synced (and the journal compacted when `compacted`: its copies of the bodies gone), copied while the
 * store runs. history.db's path in the copy.
 */
async function killedWith(t: Parameters<typeof withDir>[0], count: number, compacted = false): Promise<string> {
  const running = await withDir(t);
  const store = await openStore(running);
  t.after(() => store.close());
  await conversation(store, 'c');
  for (let i = 0; i < count; i++) await store.messages.append(message('c', `m${i}`, bulkyContent(i), i));
  await store.history.sync();
  if (compacted) await store.db.compact();
  return path.join(await copiedWhileRunning(t, running), HISTORY_FILE_NAME);
}

test(
  'history.db cut short while its WAL holds commits: the refused open changes neither file (no checkpoint fills the cut with zeros), so the next open refuses it too',
  { timeout: 90_000 },
  async (t) => {
    // About 2 MB of bodies: at least one checkpoint into the file, later commits in the WAL.
    const file = await killedWith(t, 60);
    const dir = path.dirname(file);
    assert.ok((await stat(`${file}-wal`)).size > 0, 'the WAL holds commits');
    await cutSoPagesAreLost(file);
    const before = await bothDigests(file);

    await assert.rejects(openStore(dir), /history\.db is damaged \(.*cut short\).*serve --recover/s);
    assert.deepEqual(await bothDigests(file), before, 'history.db and its WAL as they were');
    await assert.rejects(openStore(dir), /history\.db is damaged \(.*cut short\)/s);

    // Opened for --recover and closed without the salvage (a start that then fails: service.db not
    // opened, a migration that throws): read only, so still both files as they were.
    const reading = new HistoryDb(file, true);
    assert.match(String(reading.damage), /cut short/);
    reading.close();
    assert.deepEqual(await bothDigests(file), before, 'as they were after an open for --recover');
    await assert.rejects(openStore(dir), /history\.db is damaged \(.*cut short\)/s);

    // The salvage keeps the damaged file and its WAL aside unchanged.
    const recovered = await openStore(dir, { recover: true });
    t.after(() => recovered.close());
    assert.match(String(await recovered.problem()), /rebuilt by --recover/);
    const aside = (await readdir(dir)).find((f) => /^history\.db\.damaged-[^.]*$/.test(f));
    assert.ok(aside, 'the damaged file is kept aside');
    assert.deepEqual(await bothDigests(path.join(dir, aside, HISTORY_FILE_NAME)), before, 'kept aside as it was, its WAL beside it');
  },
);

test(
  'history.db emptied while its WAL holds commits: refused; a --recover start that fails leaves both as they were; --recover reads every body back from the WAL and keeps it aside',
  { timeout: 90_000 },
  async (t) => {
    // Fewer pages than a checkpoint takes: every body is in the WAL. The journal compacted, so that what
    // --recover reads back comes from the WAL, not from the journal's copies.
    const file = await killedWith(t, 30, true);
    const dir = path.dirname(file);
    await truncate(file, 0);
    const before = await bothDigests(file);
    assert.notEqual(before[1], await digest('/nonexistent'), 'the WAL is there');

    await assert.rejects(openStore(dir), /history\.db is damaged \(it is empty but its WAL holds commits.*cut short\)/s);
    assert.deepEqual(await bothDigests(file), before, 'both as they were');
    // A --recover start that fails after history.db's open (service.db damaged): nothing of history.db touched.
    const serviceDb = path.join(dir, 'service.db');
    const good = await readFile(serviceDb);
    await writeFile(serviceDb, Buffer.alloc(8192, 0x5a));
    await assert.rejects(openStore(dir, { recover: true }));
    assert.deepEqual(await bothDigests(file), before, 'both as they were after a failed --recover start');
    await writeFile(serviceDb, good);
    await assert.rejects(openStore(dir), /it is empty but its WAL holds commits/);

    const recovered = await openStore(dir, { recover: true });
    t.after(() => recovered.close());
    assert.match(String(await recovered.problem()), /rebuilt by --recover: 30 bodies read back, 0 lost/);
    const messages = await recovered.messages.recent('c', { limit: 100 });
    assert.deepEqual(
      messages.map((m) => m.content),
      Array.from({ length: 30 }, (_, i) => bulkyContent(i)),
    );
    const kept = (await readdir(dir)).filter((f) => /^history\.db\.damaged-/.test(f));
    assert.equal(kept.length, 1);
    assert.deepEqual(await bothDigests(path.join(dir, kept[0], HISTORY_FILE_NAME)), before, 'the empty file and its WAL kept aside as they were');
  },
);

test(
  'history.db replaced by an older copy: `recover` fills the lost keys of every referrer (a pending delivery\u2019s, an inbox message\u2019s), counts them all, and never sends the placeholder',
  { timeout: 90_000 },
  async (t) => {
    const dir = await withDir(t);
    const file = path.join(dir, HISTORY_FILE_NAME);
    let store = await openStore(dir);
    t.after(() => store.close().catch(() => {}));
    await conversation(store, 'c');
    await store.messages.append(message('c', 'kept', 'in the older copy', 1));
    await store.close();
    const older = path.join(dir, 'older-copy');
    await copyFile(file, older);

    // After the copy: a message waiting in the inbox, and one answered whose reply's delivery is pending.
    store = await openStore(dir);
    const now = Date.now();
    const url = 'http://127.0.0.1:9/out';
    for (const tag of ['wait', 'ok']) {
      const accepted = await store.webhooks.accept({
        account: 'a',
        source: 'webhook:a',
        url,
        newConversation: { id: `w-${tag}`, title: tag },
        message: { id: `m-${tag}`, content: `question ${tag}` },
        now,
        idempotencyMs: 60_000,
      });
      assert.equal(accepted.kind, 'accepted');
    }
    await store.webhooks.admit('m-ok');
    const reply = { id: 'r-ok', conversation_id: 'w-ok', role: 'assistant' as const, content: 'the reply', timestamp: new Date(now).toISOString() };
    await store.webhooks.answer('m-ok', reply, { id: 'd-ok', account: 'a', url, body: '{"message":"the reply"}', now, give_up_ms: now + 60_000 });
    await store.close();
    await copyFile(older, file);
    await rm(`${file}-wal`, { force: true });

    await assert.rejects(openStore(dir), /missing message bodies that were acknowledged/);
    store = await openStore(dir, { recover: true });
    // Four bodies lost: the inbox message's, the admitted message's, the reply's and the delivery's.
    assert.match(String(await store.problem()), /had lost 4 acknowledged bodies/);
    assert.equal((await store.messages.get('r-ok'))?.content, LOST_BODY_TEXT);
    assert.equal(await store.webhooks.deliveryBody(store.webhooks.getDelivery('d-ok')!), undefined, 'a lost delivery body is never the placeholder sent');
    assert.equal((await store.history.get([store.webhooks.getDelivery('d-ok')!.body_key!])).get(store.webhooks.getDelivery('d-ok')!.body_key!)?.content, LOST_BODY_TEXT, 'its key filled');
    // The inbox message joins its conversation as lost, rather than failing its turn on a missing body.
    await store.webhooks.admit('m-wait');
    assert.equal((await store.messages.get('m-wait'))?.content, LOST_BODY_TEXT);
    assert.equal((await store.messages.get('kept'))?.content, 'in the older copy');
  },
);

/** What `serve --recover` makes of `dir`: the problem it reports and conversation 'c' as it reads (each message's first words, or "lost"). */
async function recovered(dir: string): Promise<{ problem: string | null; contents: string[] }> {
  const store = await openStore(dir, { recover: true });
  try {
    return {
      problem: String(await store.problem()).replace(/kept in \S+/, 'kept in <aside>'),
      contents: (await store.messages.recent('c', { limit: 200 })).map((m) => (m.content === LOST_BODY_TEXT ? 'lost' : m.content.slice(0, 16))),
    };
  } finally {
    await store.close();
  }
}

const SALVAGE_DAMAGES: { what: string; damage: (t: Parameters<typeof withDir>[0]) => Promise<string> }[] = [
  {
    what: 'cut short while its WAL holds commits',
    damage: async (t) => {
      // About 5 MB of bodies: past a checkpoint (1,000 frames), so the file holds bodies its WAL does not.
      const file = await killedWith(t, 150, true);
      await cutSoPagesAreLost(file);
      return file;
    },
  },
  {
    what: 'emptied while its WAL holds commits',
    damage: async (t) => {
      const file = await killedWith(t, 30, true);
      await truncate(file, 0);
      return file;
    },
  },
];
const SALVAGE_FAULTS: SalvageFault[] = ['after-first-move', 'after-moves', 'after-fill'];

for (const { what, damage } of SALVAGE_DAMAGES) {
  test(
    `history.db ${what}: serve --recover killed (kill -9) at any point of its salvage leaves the next start refusing it as before, and the next --recover reads back what one never interrupted does`,
    { timeout: 200_000 },
    async (t) => {
      const file = await damage(t);
      const damaged = path.dirname(file);
      const before = await bothDigests(file);
      // The journal compacted: what a salvage reads back comes from the damaged file and its WAL alone.
      const uninterrupted = await recovered(await copiedWhileRunning(t, damaged));
      assert.match(String(uninterrupted.problem), /rebuilt by --recover/);
      assert.ok(
        uninterrupted.contents.some((c) => c !== 'lost'),
        'bodies are read back',
      );
      for (const point of SALVAGE_FAULTS) {
        const dir = await copiedWhileRunning(t, damaged);
        const child = spawnStoreChild('recover', dir, { [SALVAGE_FAULT_ENV]: point });
        assert.equal((await child.exited).signal, 'SIGKILL', `${point}: ${child.stderr()}`);
        // Refused as before, saying that the salvage cut short was undone first.
        await assert.rejects(openStore(dir), /history\.db is damaged \(.*cut short\).*serve --recover.*a salvage by serve --recover was cut short/s, `${point}: refused as before`);
        assert.deepEqual(await recovered(dir), uninterrupted, `${point}: read back as by a salvage never interrupted`);
        const asides = (await readdir(dir)).filter((f) => f.startsWith(`${HISTORY_FILE_NAME}.`) && !/-(wal|shm)$/.test(f));
        assert.equal(asides.length, 1, `${point}: one aside (${asides.join(', ')})`);
        assert.match(asides[0], /^history\.db\.damaged-/);
        assert.deepEqual(await bothDigests(path.join(dir, asides[0], HISTORY_FILE_NAME)), before, `${point}: the damaged file and its WAL kept aside as they were`);
      }
    },
  );
}

/**
 * What a salvage cut short leaves, in a directory whose history.db was written since by something that
 * knows nothing of it (a version without the undo, or a person who put a backup in place): a healthy
 * store of 12 messages, and `history.db.salvaging/` holding an older copy (its file, or its WAL).
 */
async function healthyBesideLeftover(t: Parameters<typeof withDir>[0], leftover: 'file' | 'wal'): Promise<{ dir: string; salvaging: string }> {
  const dir = await withDir(t);
  let store = await openStore(dir);
  await conversation(store, 'c');
  await store.messages.append(message('c', 'm0', 'the first', 0));
  await store.close();
  const salvaging = path.join(dir, `${HISTORY_FILE_NAME}.salvaging`);
  const older = path.join(dir, 'older');
  await copyFile(path.join(dir, HISTORY_FILE_NAME), older);
  store = await openStore(dir);
  for (let i = 1; i < 12; i++) await store.messages.append(message('c', `m${i}`, `later ${i} ${bulkyContent(i)}`, i));
  await store.close();
  await mkdir(salvaging);
  await rename(older, path.join(salvaging, leftover === 'file' ? HISTORY_FILE_NAME : `${HISTORY_FILE_NAME}-wal`));
  if (leftover === 'wal') await writeFile(path.join(dir, `${HISTORY_FILE_NAME}-wal`), 'a WAL written since, not the salvage');
  return { dir, salvaging };
}

for (const leftover of ['file', 'wal'] as const) {
  test(`a salvage's leftover directory (its ${leftover}) beside a history.db written since: the open moves nothing and deletes nothing, and says why`, { timeout: 90_000 }, async (t) => {
    const { dir, salvaging } = await healthyBesideLeftover(t, leftover);
    const file = path.join(dir, HISTORY_FILE_NAME);
    const outside = await bothDigests(file);
    const inside = await bothDigests(path.join(salvaging, HISTORY_FILE_NAME));
    await assert.rejects(openStore(dir), /history\.db\.salvaging.*not .*rebuild|history\.db\.salvaging.*written since/s);
    assert.deepEqual(await bothDigests(file), outside, 'history.db and its WAL as they were');
    assert.deepEqual(await bothDigests(path.join(salvaging, HISTORY_FILE_NAME)), inside, 'the leftover as it was');
    if (leftover === 'wal') return;
    // Once the person moves the leftover away, the store opens with every message.
    await rename(salvaging, path.join(dir, 'kept-by-hand'));
    const store = await openStore(dir);
    t.after(() => store.close());
    assert.equal(store.messages.count('c'), 12);
    assert.match((await store.messages.get('m11'))!.content, /^later 11/);
  });
}

test(
  'serve --recover killed (kill -9) while it puts the damaged files aside, its rebuild whole: the next start opens the rebuild (the salvage is done once its directory is renamed aside), not refusing it as written by someone else',
  { timeout: 200_000 },
  async (t) => {
    const file = await SALVAGE_DAMAGES[1].damage(t);
    const damaged = path.dirname(file);
    const uninterrupted = await recovered(await copiedWhileRunning(t, damaged));
    const dir = await copiedWhileRunning(t, damaged);
    const child = spawnStoreChild('recover', dir, { [SALVAGE_FAULT_ENV]: 'in-aside' satisfies SalvageFault });
    assert.equal((await child.exited).signal, 'SIGKILL', child.stderr());
    // Refused before s20: its rebuild's note removed and its directory not yet renamed, the undo took the
    // rebuild for a file written since by something else.
    const store = await openStore(dir);
    try {
      assert.deepEqual(
        (await store.messages.recent('c', { limit: 200 })).map((m) => (m.content === LOST_BODY_TEXT ? 'lost' : m.content.slice(0, 16))),
        uninterrupted.contents,
        'the rebuild, as a salvage never interrupted made it',
      );
    } finally {
      await store.close();
    }
    const asides = (await readdir(dir)).filter((f) => f.startsWith(`${HISTORY_FILE_NAME}.`) && !/-(wal|shm)$/.test(f));
    assert.equal(asides.length, 1, asides.join(', '));
    assert.match(asides[0], /^history\.db\.damaged-/);
  },
);

test("history.db's key counter (sqlite_sequence) on a damaged page: the open refuses with --recover's hint, not a bare SQLite error, and --recover starts", { timeout: 90_000 }, async (t) => {
  const file = await closedWith(t, 20);
  const dir = path.dirname(file);
  const reading = new SqliteFile(file, { readOnly: true });
  reading.exec('PRAGMA locking_mode = EXCLUSIVE');
  const page = Number(reading.get("SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_sequence'")?.rootpage);
  reading.close();
  assert.ok(page > 1, `sqlite_sequence's page: ${page}`);
  const fh = await openFile(file, 'r+');
  await fh.write(Buffer.alloc(4096, 0xff), 0, 4096, (page - 1) * 4096);
  await fh.close();

  await assert.rejects(openStore(dir), /history\.db is damaged \(.*malformed.*\).*serve --recover/s);
  const store = await openStore(dir, { recover: true });
  t.after(() => store.close());
  assert.match(String(await store.problem()), /rebuilt by --recover/);
  const messages = await store.messages.recent('c', { limit: 100 });
  assert.equal(messages.length, 20);
});
