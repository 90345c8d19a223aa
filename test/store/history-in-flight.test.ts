// Review of s12/agent12a, a group put the worker refuses (a full disk) after a later request was sent
// (all three failed before bodies not yet answered were kept: history-store.ts `unanswered`):
// - a read right after the acknowledgement got the placeholder and flagged history.db damaged;
// - a conversation deleted meanwhile had its bodies written back (unreferenced, in the search index);
// - a read of a body still held for its put (gone from the recent bodies) got the placeholder too (the
//   first attempt, an in-flight map filled when the put was sent, missed it: the read sends the put).
// The refusal is a row SQLite cannot bind; the worker's messages are held to set the order.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { HistoryStore } from '../../src/store/history/history-store';
import { cutText } from '../../src/store/history/protocol';
import { startHistoryWorker } from '../../src/store/history/start-worker';
import { openStore, type Store } from '../../src/store/index';
import { refuseFirstPut } from '../helpers/refusing-worker';
import { CUT_OUTPUT, spawnStoreChild, tempDir } from '../helpers/store-utils';
import { CUT_KEEP_CHARS } from '../../src/store/history/maintenance';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A store (conversations 'c' and 'd') whose history worker refuses the first put carrying a body that
 * starts with `marked` (a row SQLite cannot bind joins it). `slow`: that put reaches the worker only
 * with the next request, as from a worker slow to refuse (a full disk met at commit).
 */
async function refusingStore(t: TestContext, marked: string, slow: boolean, options: { hotMessages?: number } = {}): Promise<Store> {
  const { dir, cleanup } = await tempDir('rev12a-');
  const worker = startHistoryWorker();
  const store = await openStore(dir, { boot: { history: HistoryStore.boot(worker) }, maintenanceIntervalMs: 3_600_000, ...options });
  await store.conversations.create({ id: 'c', title: 't', source: 'ws', created_at: new Date(0).toISOString() });
  await store.conversations.create({ id: 'd', title: 't', source: 'ws', created_at: new Date(0).toISOString() });
  await sleep(300);
  const undo = refuseFirstPut(worker, marked, slow);
  t.after(async () => {
    undo();
    await store.close();
    await cleanup();
  });
  return store;
}

test('a read right after a refused put: the acknowledged body, not the placeholder and not "damaged"', async (t) => {
  const store = await refusingStore(t, 'REFUSE', true);
  const big = 'REFUSE ' + 'r'.repeat(5 * 1024 * 1024); // larger than the recent bodies' cache
  await store.messages.append({ id: 'm0', conversation_id: 'c', role: 'tool', content: big, timestamp: new Date(1).toISOString() });
  const got = await store.messages.get('m0');
  assert.equal(got?.content.slice(0, 10), big.slice(0, 10));
  assert.equal(store.history.damaged, null);
});

test('a deleted message body does not come back into history.db', async (t) => {
  const store = await refusingStore(t, 'SECRET', true);
  await store.messages.append({ id: 'm0', conversation_id: 'c', role: 'user', content: 'SECRET ' + 's'.repeat(1100 * 1024), timestamp: new Date(1).toISOString() });
  assert.equal(await store.conversations.delete('c'), true);
  await store.maintenance.run();
  // The disk has room again: the next write carries the owed bodies.
  await store.messages.append({ id: 'n0', conversation_id: 'd', role: 'user', content: 'later', timestamp: new Date(2).toISOString() });
  await store.history.answered();
  assert.equal((await store.history.search('SECRET', null, 10)).length, 0, 'the deleted text is not in the search index');
  const { maxKey } = await store.history.stats();
  const keys = await store.history.keysBetween(1, maxKey);
  const referenced = store.db.get<{ n: number }>('SELECT count(*) AS n FROM messages WHERE body_key IS NOT NULL')?.n ?? 0;
  assert.equal(keys.length - referenced, 0, 'no unreferenced body in history.db');
});

test('a read of a body still held for its put, gone from the recent bodies, whose put is then refused: the body', async (t) => {
  const store = await refusingStore(t, 'HELD', false);
  // More bodies than the recent bodies keep (1,024), small enough to be held for one put: the first
  // is only in the group when it is read (its row is applied at once, the read comes before the
  // group's 50 ms are up), and the read sends the put ahead of it.
  const messages = Array.from({ length: 1_100 }, (_, i) => ({ id: `m${i}`, conversation_id: 'c', role: 'user' as const, content: `HELD ${i}`, timestamp: new Date(1).toISOString() }));
  const appended = store.messages.appendMany(messages);
  const got = await store.messages.get('m0');
  await appended;
  assert.equal(got?.content, 'HELD 0');
  assert.equal(store.history.damaged, null);
  await store.history.answered();
  assert.match(String(store.history.degraded), /./, 'the put was refused');
});

// Retention's cut of a body held in memory (owed after a refused put, or not yet answered): it was
// written back whole once the disk had room, and read whole meanwhile, its row marked cut all the same.
for (const when of ['owed (its put refused before the cut)', 'unanswered (its put refused after the cut was asked)'] as const) {
  test(`a tool output retention cuts while its body is ${when}: read cut, and written back cut`, async (t) => {
    const owedFirst = when.startsWith('owed');
    const store = await refusingStore(t, 'CUTME', !owedFirst);
    const output = 'CUTME ' + 'o'.repeat(8_000);
    await store.messages.append({ id: 't0', conversation_id: 'c', role: 'tool', content: output, timestamp: new Date(1).toISOString() });
    if (owedFirst) {
      await store.history.answered();
      assert.match(String(store.history.degraded), /./, 'the put was refused: the body is owed');
    }
    store.maintenance.setPolicy({ toolOutputDays: 1 });
    await store.maintenance.run();
    const note = '\n… [cut: tool output older than 1 days]';
    const row = store.db.get<{ cut: number; bytes: number }>("SELECT cut, bytes FROM messages WHERE id = 't0'");
    assert.equal(row?.cut, 1, 'its row is marked cut');
    assert.equal(row?.bytes, Buffer.byteLength(output.slice(0, 400) + note), 'its size is the cut body\u2019s');
    const read = await store.messages.get('t0');
    assert.ok(read?.content === output.slice(0, 400) + note, `read cut while held in memory (${read?.content.length} characters)`);
    // The disk has room again: the next write carries the owed body.
    await store.messages.append({ id: 'n0', conversation_id: 'd', role: 'user', content: 'later', timestamp: new Date(2).toISOString() });
    await store.history.answered();
    assert.equal(store.history.degraded, null, 'the owed body was written');
    const key = store.db.get<{ body_key: number }>("SELECT body_key FROM messages WHERE id = 't0'")!.body_key;
    const [stored] = (await store.history.get([key])).values();
    assert.ok(stored?.content === output.slice(0, 400) + note, `written back cut (${stored?.content.length} characters)`);
    assert.equal(stored?.cut, true);
  });
}

/** A store whose tool output 't0' (conversation 'c', 8,008 characters) was refused by the worker: owed. */
async function owedToolOutput(t: TestContext): Promise<{ store: Store; output: string; key: number }> {
  const store = await refusingStore(t, 'COLDCUT', false, { hotMessages: 0 });
  const output = 'COLDCUT ' + 'o'.repeat(8_000);
  await store.messages.append({ id: 't0', conversation_id: 'c', role: 'tool', content: output, timestamp: new Date(1).toISOString() });
  await store.history.answered();
  const key = store.db.get<{ body_key: number }>("SELECT body_key FROM messages WHERE id = 't0'")!.body_key;
  assert.deepEqual(await store.history.keysBetween(key, key), [], 'the put was refused: the body is owed');
  return { store, output, key };
}

// A row whose body is owed does not move to history.db's cold rows: once moved, only its journal record
// held the body, and the next open puts back only bodies service.db refers to (the kill -9 test below lost
// it so). It moves once the body is written, and retention then cuts it there (s15, trust16; before, s15
// trust15 cut such a cold row's held copy in memory).
test('a tool output whose body is owed stays hot until the body is written; then it moves cold and retention cuts it', async (t) => {
  const { store, output } = await owedToolOutput(t);
  await store.maintenance.run();
  assert.equal(store.db.get<{ n: number }>("SELECT count(*) AS n FROM messages WHERE id = 't0'")?.n, 1, 'the row stays in sql.js while its body is owed');
  // The disk has room again: the next write carries the owed body, and the row moves.
  await store.messages.append({ id: 'n0', conversation_id: 'd', role: 'user', content: 'later', timestamp: new Date(2).toISOString() });
  await store.history.answered();
  await store.maintenance.run();
  assert.equal(store.db.get<{ n: number }>("SELECT count(*) AS n FROM messages WHERE id = 't0'")?.n, 0, 'the row went cold');
  store.maintenance.setPolicy({ toolOutputDays: 1 });
  await store.maintenance.run();
  const cutBody = output.slice(0, 400) + '\n… [cut: tool output older than 1 days]';
  const read = await store.messages.get('t0');
  assert.ok(read?.content === cutBody, `read cut (${read?.content.length} characters)`);
  const [cold] = await store.history.cold({ kind: 'id', id: 't0' });
  assert.equal(cold?.bytes, Buffer.byteLength(cutBody), 'the cold row counts the cut size');
  assert.equal(store.db.get<{ bytes: number }>("SELECT bytes FROM conversations WHERE id = 'c'")?.bytes, Buffer.byteLength(cutBody), 'the conversation counts the cut size');
});

// A put carrying the owed body sent while retention's cut is asked (a turn's group put, a compaction's
// sync): review15d found the worker then wrote the body whole after cutting a cold row, kept whole for
// good while the conversation counted it cut. Owed rows no longer go cold (above); the hot cut meets the
// same put: history.db must still end with the cut body.
test('a retention cut of an owed body while a put of it is in flight: history.db ends with the cut body', async (t) => {
  const { store, output, key } = await owedToolOutput(t);
  await store.maintenance.run();
  const history = store.history as unknown as { cut: (...args: unknown[]) => Promise<unknown> };
  const cut = history.cut.bind(history);
  let synced: Promise<unknown> | undefined;
  history.cut = (...args: unknown[]) => {
    const asked = cut(...args);
    synced = store.history.sync().catch((err: unknown) => err);
    return asked;
  };
  store.maintenance.setPolicy({ toolOutputDays: 1 });
  await store.maintenance.run();
  await synced;
  history.cut = cut;
  assert.ok(synced, 'a put was sent while the cut was asked');
  const cutBody = output.slice(0, 400) + '\n… [cut: tool output older than 1 days]';
  const [stored] = (await store.history.get([key])).values();
  assert.ok(stored?.content === cutBody, `history.db holds the cut body (${stored?.content.length} characters)`);
  assert.equal(stored?.cut, true);
  assert.equal(store.db.get<{ bytes: number }>("SELECT bytes FROM conversations WHERE id = 'c'")?.bytes, Buffer.byteLength(cutBody));
});

test('a body cut in memory is cut as SQLite cuts it: characters are code points', () => {
  assert.equal(cutText('\u{1F600}a\u{1F600}b', 3, '!'), '\u{1F600}a\u{1F600}!');
  assert.equal(cutText('short', 400, ' [cut]'), 'short [cut]');
});

// A body held in memory when the service is killed has only its journal record, which held it whole:
// the next open put it back whole under a row marked cut (hot: now the cut's record journals the cut
// copy), or not at all (cold: its row had moved to history.db, and the open puts back only the bodies
// service.db refers to: read as the placeholder; now the row waits in sql.js for its body) (s15, trust16).
for (const mode of ['cut-owed', 'cut-cold'] as const) {
  const what = mode === 'cut-cold' ? 'a cold tool output' : 'a tool output';
  test(`${what} cut by retention while its body is owed, then kill -9: the restart reads it cut`, { timeout: 120_000 }, async (t) => {
    const { dir, cleanup } = await tempDir('cut-kill-');
    t.after(cleanup);
    const child = spawnStoreChild(mode, dir);
    t.after(() => void child.proc.kill('SIGKILL'));
    await child.waitFor((lines) => lines.includes('cut'), 90_000);
    child.proc.kill('SIGKILL');
    assert.equal((await child.exited).signal, 'SIGKILL');

    const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
    t.after(() => store.close());
    const cutBody = cutText(CUT_OUTPUT, CUT_KEEP_CHARS, '\n… [cut: tool output older than 1 days]');
    const read = await store.messages.get('t0');
    assert.ok(read?.content === cutBody, `read cut after the restart (${read?.content.length} characters: ${read?.content.slice(0, 40)})`);
    assert.equal(store.history.damaged, null);
    // cut-cold: the row stays in sql.js while its body is owed (it moved before, and its body was lost).
    const key = store.db.get<{ body_key: number }>("SELECT body_key FROM messages WHERE id = 't0'")?.body_key ?? (await store.history.cold({ kind: 'id', id: 't0' }))[0]?.body_key;
    const [stored] = (await store.history.get([key!])).values();
    assert.ok(stored?.content === cutBody, `history.db holds it cut (${stored?.content.length} characters)`);
    assert.equal(stored?.cut, true, 'and marked cut');
    assert.equal(store.db.get<{ bytes: number }>("SELECT bytes FROM conversations WHERE id = 'c'")?.bytes, Buffer.byteLength(cutBody), 'the conversation counts the cut size');
  });
}
