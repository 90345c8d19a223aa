// Retention's window (s31): once retention has decided a conversation goes, it goes in one visible step
// (not listed, not readable, a new message to it refused as not found), and the batches that free its
// messages and their bodies follow. A pass held between two of those batches (a gate on history.db's
// remove), and a real child process killed -9 there, show what a client meets meanwhile and after.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../src/store/index';
import type { NewMessage, Store } from '../../src/store/index';
import { BULKY_NOW, spawnStoreChild, testDir } from '../helpers/store-utils';

const LIMIT = { timeout: 90_000 };
const DAY = 86_400_000;
const OLD = BULKY_NOW - 60 * DAY;
/** Five of retention's batches (200 messages each). */
const OLD_MESSAGES = 1000;
const iso = (ms: number) => new Date(ms).toISOString();

const withDir = (t: { after: (fn: () => Promise<void>) => void }) => testDir(t, 'retention-window-test-');

function message(conversationId: string, i: number, ms: number): NewMessage {
  return { id: `${conversationId}-${i}`, conversation_id: conversationId, role: i % 2 === 0 ? 'user' : 'assistant', content: `words of ${conversationId} number ${i}`, timestamp: iso(ms + i) };
}

/** 'old' (60 days idle, OLD_MESSAGES messages) and 'keep' (active a day ago, 2 messages). */
async function fill(store: Store): Promise<void> {
  await store.conversations.create({ id: 'old', title: 'old', source: 'ws', created_at: iso(OLD) });
  for (let i = 0; i < OLD_MESSAGES; i += 200) await store.messages.appendMany(Array.from({ length: 200 }, (_, k) => message('old', i + k, OLD)));
  await store.conversations.create({ id: 'keep', title: 'keep', source: 'ws', created_at: iso(BULKY_NOW - DAY) });
  await store.messages.appendMany([message('keep', 0, BULKY_NOW - DAY), message('keep', 1, BULKY_NOW - DAY)]);
}

/** Rows of a conversation's messages still in sql.js, whatever readers make of them. */
const rowsOf = (store: Store, id: string) => store.db.get<{ n: number }>('SELECT count(*) AS n FROM messages WHERE conversation_id = ?', [id])?.n ?? 0;

/** Bodies in history.db that no message refers to (none once maintenance has run). */
async function unreferencedBodies(store: Store): Promise<number> {
  const { maxKey } = await store.history.stats();
  const keys = await store.history.keysBetween(1, maxKey);
  const referenced = store.db.get<{ n: number }>('SELECT count(*) AS n FROM messages WHERE body_key IS NOT NULL')?.n ?? 0;
  return keys.length - referenced;
}

/**
 * Holds the maintenance at its first freeing of bodies after some of `id`'s `rows` in sql.js were deleted: between
 * two of retention's batches. `reached` resolves there; `release` lets it go on.
 */
function holdBetweenBatches(store: Store, id: string, rows: number): { reached: Promise<void>; release: () => void } {
  const remove = store.history.remove.bind(store.history);
  let arrive!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (arrive = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  store.history.remove = async (keys) => {
    if (!held && keys.length > 0 && rowsOf(store, id) < rows) {
      held = true;
      arrive();
      await gate;
    }
    return remove(keys);
  };
  return { reached, release };
}

async function whatAClientSees(store: Store, id: string) {
  return {
    listed: store.conversations.list({ limit: 100 }).some((c) => c.id === id),
    row: store.conversations.get(id) !== undefined,
    recent: (await store.messages.recent(id, { limit: 10_000, includeTools: true })).length,
    after: (await store.messages.after(id, 0)).length,
    first: (await store.messages.get(`${id}-0`)) !== undefined,
    last: (await store.messages.get(`${id}-${OLD_MESSAGES - 1}`)) !== undefined,
    found: (await store.messages.search('words', { conversationId: id, limit: 5 })).length,
  };
}

const GONE = { listed: false, row: false, recent: 0, after: 0, first: false, last: false, found: 0 };

const CASES = [
  { name: 'max_days', policy: 'days' },
  { name: 'max_bytes (the oldest)', policy: 'bytes' },
  // Its first 552 messages' metadata moved to history.db (cold rows), the rest in sql.js.
  { name: 'max_days, a conversation partly cold', policy: 'days', hotMessages: 500 },
] as const;

for (const c of CASES) {
  test(
    `retention by ${c.name}, held between two batches: the conversation is already gone to every reader, a message to it is refused as not found, none acknowledged is deleted`,
    LIMIT,
    async (t) => {
      const dir = await withDir(t);
      const store = await openStore(dir, { now: () => BULKY_NOW, maintenanceIntervalMs: 3_600_000, ...('hotMessages' in c ? { hotMessages: c.hotMessages } : {}) });
      t.after(() => store.close());
      await fill(store);
      await store.maintenance.run();
      const cold = store.db.get<{ n: number }>("SELECT cold_count AS n FROM conversations WHERE id = 'old'")!.n;
      assert.equal(cold > 0, 'hotMessages' in c, `cold rows: ${cold}`);
      const hot = rowsOf(store, 'old');
      // max_bytes: what 'keep' holds fits, so only the oldest goes.
      const keepBytes = store.db.get<{ bytes: number }>("SELECT bytes FROM conversations WHERE id = 'keep'")!.bytes;
      const hold = holdBetweenBatches(store, 'old', hot);
      store.maintenance.setPolicy(c.policy === 'days' ? { maxDays: 30 } : { maxBytes: keepBytes });
      const pass = store.maintenance.run();
      let acknowledged: boolean;
      try {
        await hold.reached;
        assert.ok(rowsOf(store, 'old') > 0 && rowsOf(store, 'old') < hot, `held midway: ${rowsOf(store, 'old')} of ${hot} rows left`);

        assert.deepEqual(await whatAClientSees(store, 'old'), GONE, 'half deleted, yet seen');
        // A user resuming it now: refused before it is acknowledged, as delete_conversation's.
        const late = { ...message('old', OLD_MESSAGES, BULKY_NOW), id: 'late' };
        acknowledged = await store.messages.append(late).then(
          () => true,
          (err: Error) => {
            assert.match(err.message, /conversation old not found/);
            return false;
          },
        );
      } finally {
        // Else the pass waits forever, and so does the store's close.
        hold.release();
      }
      await pass;
      if (acknowledged) assert.ok(await store.messages.get('late'), 'an acknowledged message was deleted');
      assert.equal(acknowledged, false, 'a message to a conversation retention decided to delete is refused');

      assert.deepEqual(await whatAClientSees(store, 'old'), GONE);
      assert.equal(rowsOf(store, 'old'), 0, 'its rows are all freed');
      assert.deepEqual(await store.history.cold({ kind: 'recent', conversationId: 'old', maxSeq: Number.MAX_SAFE_INTEGER, limit: 10, includeTools: true }), [], 'its cold rows too');
      assert.equal(await unreferencedBodies(store), 0, 'and their bodies');
      assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM history_cold_trash')?.n, 0);
      assert.deepEqual(
        (await store.messages.recent('keep')).map((m) => m.id),
        ['keep-0', 'keep-1'],
      );
    },
  );
}

test('a message stored before retention decided makes the conversation active again: retention keeps it, every message whole', LIMIT, async (t) => {
  const dir = await withDir(t);
  const store = await openStore(dir, { now: () => BULKY_NOW, maintenanceIntervalMs: 3_600_000 });
  t.after(() => store.close());
  await fill(store);
  await store.maintenance.run();
  store.maintenance.setPolicy({ maxDays: 30 });
  // Sent in the same tick as the pass starts: whichever the store takes first, nothing acknowledged goes.
  const pass = store.maintenance.run();
  const late = store.messages.append({ ...message('old', OLD_MESSAGES, BULKY_NOW), id: 'late' }).then(
    () => true,
    () => false,
  );
  const [acknowledged] = await Promise.all([late, pass]);
  if (acknowledged) {
    assert.equal((await store.messages.recent('old', { limit: 10_000 })).length, OLD_MESSAGES + 1, 'kept whole');
    assert.ok(store.conversations.get('old'));
  } else {
    assert.deepEqual(await whatAClientSees(store, 'old'), GONE);
    assert.equal(rowsOf(store, 'old'), 0);
  }
});

test('kill -9 between two of retention’s batches: the next open lists nothing of the conversation, and its first pass finishes the job without a policy', LIMIT, async (t) => {
  const dir = await withDir(t);
  let store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
  await fill(store);
  await store.close();

  const child = spawnStoreChild('retire', dir);
  t.after(() => {
    child.proc.kill('SIGKILL');
  });
  await child.waitFor((lines) => lines.some((l) => l.startsWith('held ')), 60_000);
  child.proc.kill('SIGKILL');
  await child.exited;
  const left = Number(child.lines.find((l) => l.startsWith('held '))!.split(' ')[1]);
  assert.ok(left > 0 && left < OLD_MESSAGES, `killed between batches: ${left} rows left`);

  // No retention policy now: what the killed pass decided is finished all the same.
  store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
  t.after(() => store.close());
  assert.deepEqual(await whatAClientSees(store, 'old'), GONE, 'the killed pass left a half conversation visible');
  await store.maintenance.run();
  assert.equal(rowsOf(store, 'old'), 0, 'the next pass finished the job');
  assert.equal(await unreferencedBodies(store), 0);
  assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM history_cold_trash')?.n, 0);
  assert.deepEqual(
    store.conversations.list({ limit: 10 }).map((c) => c.id),
    ['keep'],
  );
  assert.equal(store.messages.count(), 2);
});

test('a webhook message accepted into an old conversation and waiting in the inbox: retention keeps the conversation; once decided, a webhook message to it is not_found', LIMIT, async (t) => {
  const dir = await withDir(t);
  const store = await openStore(dir, { now: () => BULKY_NOW, maintenanceIntervalMs: 3_600_000 });
  t.after(() => store.close());
  const source = 'webhook:acct';
  for (const id of ['waiting', 'idle']) {
    await store.conversations.create({ id, title: id, source, created_at: iso(OLD) });
    await store.messages.append(message(id, 0, OLD));
  }
  const accept = (conversationId: string, id: string) =>
    store.webhooks.accept({
      account: 'acct',
      source,
      url: '/in',
      conversationId,
      newConversation: { id: `new-${id}`, title: 'new' },
      message: { id, content: 'back again' },
      now: BULKY_NOW,
      idempotencyMs: DAY,
    });
  // Accepted (202 to its sender), not yet admitted into the conversation: nothing else moved its activity.
  assert.equal((await accept('waiting', 'w1')).kind, 'accepted');

  for (const policy of [{ maxDays: 30 }, { maxBytes: 0 }]) {
    store.maintenance.setPolicy(policy);
    await store.maintenance.run();
    assert.ok(store.conversations.get('waiting'), `${JSON.stringify(policy)}: deleted with an accepted message waiting to join it`);
    assert.equal(store.webhooks.getInbox('w1')?.status, 'pending');
  }
  assert.equal(store.conversations.get('idle'), undefined);
  assert.equal((await accept('idle', 'w2')).kind, 'not_found', 'refused at once, as for delete_conversation');
});
