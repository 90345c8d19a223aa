// Migration 22 (issue 25: what sql.js holds per conversation): a conversation's moved usage was a row of
// `usage_conversations` keeping its latest usage row whole as JSON; it is now a few columns of the
// conversation's row. An old database migrates with every answer unchanged (get_usage, budgets, a
// conversation's totals and context figures as clients see them, per-message figures, list rows); a kill -9
// while the migration's record is written loses nothing; a database the migration cannot read is refused
// with a clear error and left as it was; one partly migrated finishes. Real stores in temp dirs.
import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { conversationUsageOf } from '../../src/agent/usage/usage-wire';
import { MIGRATIONS, openStore, schemaVersion } from '../../src/store/index';
import type { NewUsage, Store, UsageRow } from '../../src/store/index';
import { encodeRecord, scanRecords } from '../../src/store/record';
import { listSegments } from '../../src/store/replay';
import { trashConversation, trashMessages } from '../../src/store/conversations';
import { tempDir } from '../helpers/temp';
import { usageRowOf } from '../helpers/usage-rows';

const LIMIT = { timeout: 60_000 };
const DAY = 86_400_000;
const T0 = Date.now() - 10 * DAY;
/** The schema before migration 22. */
const OLD = MIGRATIONS.slice(0, 21);
const CONVERSATIONS = ['c0', 'c1', 'c2', 'c3', 'gone'];

function usageOf(c: string, i: number): NewUsage {
  return usageRowOf(c, i, new Date(T0 + i * DAY + CONVERSATIONS.indexOf(c) * 1000).toISOString(), {
    cost_micro: c === 'c1' && i === 2 ? null : 50 + i,
    context_used: i === 1 ? null : 1000 + i + 10 * CONVERSATIONS.indexOf(c),
  });
}

/** Four turns in each conversation, with their usage (as the agent stores them). */
async function fill(store: Store, turns = 4): Promise<string[]> {
  const ids: string[] = [];
  for (const c of CONVERSATIONS) {
    await store.conversations.create({ id: c, title: `title of ${c}`, source: c === 'c2' ? 'webhook:acme' : 'ws', created_at: new Date(T0).toISOString() });
    for (let i = 0; i < turns; i++) {
      const at = new Date(T0 + i * DAY).toISOString();
      await store.messages.appendMany([
        { id: `${c}-u${i}`, conversation_id: c, role: 'user', content: `question ${i} of ${c}`, timestamp: at },
        { id: `${c}-a${i}`, conversation_id: c, role: 'assistant', content: `answer ${i} of ${c}`, timestamp: at },
      ]);
      await store.usage.record(usageOf(c, i));
      ids.push(`${c}-a${i}`);
    }
  }
  return ids;
}

/**
 * What migration 19's `moveCold` did with a conversation's usage rows (the code before migration 22, kept
 * here as it was): figures to history.db, sums per day and per conversation, the latest row whole as JSON.
 */
async function moveAsBefore(store: Store, conversationId: string): Promise<void> {
  const rows = store.db
    .all<Omit<UsageRow, 'estimated'> & { estimated: number }>('SELECT * FROM usage WHERE conversation_id = ?', [conversationId])
    .map((r) => ({ ...r, estimated: r.estimated === 1 }));
  await store.history.putColdUsage(rows);
  await store.db.write((tx) => {
    for (const r of rows) {
      tx.run('DELETE FROM usage WHERE message_id = ?', [r.message_id]);
      tx.run(
        `INSERT INTO usage_days (day, source, provider, model, input, output, cached, cost_micro, unpriced, estimated, replies) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
         ON CONFLICT (day, source, provider, model) DO UPDATE SET input = input + excluded.input, output = output + excluded.output, cached = cached + excluded.cached,
           cost_micro = cost_micro + excluded.cost_micro, unpriced = unpriced + excluded.unpriced, estimated = max(estimated, excluded.estimated), replies = replies + 1`,
        [r.day, r.source, r.provider, r.model, r.input, r.output, r.cached, r.cost_micro ?? 0, r.cost_micro === null ? 1 : 0, r.estimated ? 1 : 0],
      );
    }
    const latest = rows.reduce((a, b) => (b.updated_at > a.updated_at ? b : a));
    tx.run(
      `INSERT INTO usage_conversations (conversation_id, input, output, cached, cost_micro, unpriced, estimated, replies, last)
       SELECT ?, sum(input), sum(output), sum(cached), sum(coalesce(cost_micro, 0)), sum(cost_micro IS NULL), max(estimated), count(*), ? FROM (${rows.map(() => 'SELECT ? AS input, ? AS output, ? AS cached, ? AS cost_micro, ? AS estimated').join(' UNION ALL ')})`,
      [conversationId, JSON.stringify(latest), ...rows.flatMap((r) => [r.input, r.output, r.cached, r.cost_micro, r.estimated ? 1 : 0])],
    );
  });
}

/**
 * An old database (schema 21) as the code before wrote it: c0, c1 (an unpriced reply) and c3's usage
 * moved, c3 then used again (a newer row in sql.js), c2's still in sql.js, `gone` moved then deleted
 * (its usage_conversations row was left behind).
 */
async function oldDatabase(dir: string, change?: (store: Store) => Promise<void>): Promise<string[]> {
  const store = await openStore(dir, { migrations: OLD });
  const ids = await fill(store);
  for (const c of ['c0', 'c1', 'c3', 'gone']) await moveAsBefore(store, c);
  await laterTurn(store);
  ids.push('c3-a9');
  // The code before's delete: its messages and its row in one transaction (today's leaves the messages to
  // the maintenance, which then also drops the moved usage: s31). Today's trashConversation also drops the
  // conversation's retry keys (migration 23) and its attachments' other uses (migration 25), tables and a
  // column the schema before 22 has not: they exist for this delete only, so the code before is what ran.
  await store.db.write((tx) =>
    tx.run(
      'CREATE TABLE retry_keys (conversation_id TEXT); CREATE TABLE attachment_uses (attachment_id TEXT, conversation_id TEXT); ALTER TABLE attachments ADD COLUMN uses_unknown INTEGER NOT NULL DEFAULT 0',
    ),
  );
  await store.db.write((tx) => {
    trashMessages(tx, 'conversation_id = ?', ['gone']);
    trashConversation(tx, 'gone');
  });
  await store.db.write((tx) => tx.run('DROP TABLE retry_keys; DROP TABLE attachment_uses; ALTER TABLE attachments DROP COLUMN uses_unknown'));
  await change?.(store);
  await store.close();
  return ids;
}

async function laterTurn(store: Store): Promise<void> {
  await store.messages.append({ id: 'c3-a9', conversation_id: 'c3', role: 'assistant', content: 'later', timestamp: new Date(T0 + 9 * DAY).toISOString() });
  await store.usage.record(usageOf('c3', 9));
}

/** The same history in a store of this version where nothing moved: what every answer must be. */
async function expectedAnswers(): Promise<Awaited<ReturnType<typeof answers>>> {
  const { dir, cleanup } = await tempDir('usage-migration-expected-');
  try {
    const store = await openStore(dir);
    try {
      const ids = await fill(store);
      await laterTurn(store);
      ids.push('c3-a9');
      await store.conversations.delete('gone');
      return await answers(store, ids);
    } finally {
      await store.close();
    }
  } finally {
    await cleanup();
  }
}

/** Every usage answer the service gives, conversations' as clients see them (list_conversations, get_conversation). */
async function answers(store: Store, ids: string[]) {
  const day = usageOf('c0', 1).day;
  return {
    byDay: store.usage.byDayAndModel('2000-01-01'),
    byDayWebhook: store.usage.byDayAndModel('2000-01-01', 'webhook:acme'),
    recentDays: store.usage.byDayAndModel(day),
    spent: [store.usage.spent('ws', day), store.usage.spent('webhook:acme', usageOf('c2', 3).day)],
    conversations: ['c0', 'c1', 'c2', 'c3', 'nope'].map((c) => conversationUsageOf(store.usage.ofConversation(c))),
    messages: [...(await store.usage.ofMessages([...ids, 'unknown'])).entries()].sort(([a], [b]) => a.localeCompare(b)),
    messagesOfOne: [...(await store.usage.ofMessages(['c0-a0', 'c0-a3', 'c0-u1'], 'c0')).entries()],
    list: store.conversations.list({ limit: 10 }),
  };
}

const tables = (store: Store) => store.db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'usage%' ORDER BY name").map((r) => r.name);

test('an old database migrates: every usage answer and list row is the same, the per-conversation JSON is gone', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('usage-migration-');
  t.after(cleanup);
  const expected = await expectedAnswers();
  const ids = await oldDatabase(dir);
  let store = await openStore(dir);
  assert.equal(schemaVersion(store.db), MIGRATIONS.length);
  assert.deepEqual(tables(store), ['usage', 'usage_days']);
  assert.deepEqual(await answers(store, ids), expected);
  assert.equal(expected.conversations[3]?.context_used, usageOf('c3', 9).context_used, "c3's context figures are its newer row's");
  assert.equal(expected.conversations[0]?.context_used, usageOf('c0', 3).context_used, "c0's are its moved latest row's");
  assert.equal(expected.conversations[1]?.cost, null, 'an unpriced reply keeps the sum unpriced');
  // The deleted conversation's row left behind by the code before is gone with the table; its spending still counts per day.
  assert.equal(store.usage.ofConversation('gone'), undefined);
  // Every conversation going cold after the migration: the rows left in sql.js move too (c3's newer one adds to
  // its moved sums and its context figures win), and the answers stay.
  await store.close();
  store = await openStore(dir, { hotMessages: 0 });
  t.after(() => store.close());
  await store.maintenance.run();
  assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM usage')?.n, 0, 'every usage row moved');
  assert.deepEqual(await answers(store, ids), expected);
});

test(
  'the migration is folded into the snapshot after the open that ran it: the next open does not replay it (at 100,000 conversations a replay held the loop 4-6 s at every start)',
  LIMIT,
  async (t) => {
    const { dir, cleanup } = await tempDir('usage-migration-folded-');
    t.after(cleanup);
    await oldDatabase(dir);
    const migrationIn = async () => {
      let found = 0;
      for (const segment of await listSegments(dir, 'service.db')) {
        found += scanRecords(await readFile(segment.path)).records.filter((r) => r.ops.some(([sql]) => sql === `PRAGMA user_version = ${MIGRATIONS.length}`)).length;
      }
      return found;
    };
    const store = await openStore(dir);
    assert.equal(schemaVersion(store.db), MIGRATIONS.length);
    // close() waits for a running compaction.
    await store.close();
    assert.equal(await migrationIn(), 0, "the migration's record is still in the journal");
    const again = await openStore(dir);
    t.after(() => again.close());
    assert.equal(schemaVersion(again.db), MIGRATIONS.length);
    assert.deepEqual(tables(again), ['usage', 'usage_days']);
  },
);

test('kill -9 while the migration is written: the torn record is dropped and the next open migrates again; a durable one replays', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('usage-migration-crash-');
  t.after(cleanup);
  const expected = await expectedAnswers();
  const old = path.join(dir, 'old');
  const ids = await oldDatabase(old);
  const before = path.join(dir, 'before');
  await cp(old, before, { recursive: true });
  // The migration runs on `old` and stays in the journal (not folded into the snapshot after the open).
  const live = await openStore(old, { compactMigrated: false });
  t.after(() => live.close());
  let torn: { name: string; bytes: Buffer } | undefined;
  let whole: { name: string; bytes: Buffer } | undefined;
  for (const segment of await listSegments(old, 'service.db')) {
    const buf = await readFile(segment.path);
    const record = scanRecords(buf).records.find((r) => r.ops.some(([sql]) => sql === `PRAGMA user_version = ${MIGRATIONS.length}`));
    if (!record) continue;
    const encoded = encodeRecord(record);
    const at = buf.indexOf(encoded);
    assert.ok(at >= 0);
    torn = { name: path.basename(segment.path), bytes: buf.subarray(0, at + Math.floor(encoded.length / 2)) };
    whole = { name: path.basename(segment.path), bytes: buf.subarray(0, at + encoded.length) };
  }
  assert.ok(torn && whole, 'the migration record was found in the journal');
  for (const [name, part] of [
    ['torn', torn],
    ['whole', whole],
  ] as const) {
    const copy = path.join(dir, name);
    await cp(before, copy, { recursive: true });
    await writeFile(path.join(copy, part.name), part.bytes);
    const store = await openStore(copy);
    try {
      assert.equal(schemaVersion(store.db), MIGRATIONS.length, name);
      assert.deepEqual(await answers(store, ids), expected, name);
    } finally {
      await store.close();
    }
  }
});

test('a database partly migrated (some columns added) finishes; a `last` that is not JSON keeps its sums, its context unknown', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('usage-migration-partly-');
  t.after(cleanup);
  const expected = await expectedAnswers();
  const ids = await oldDatabase(dir, (store) =>
    store.db.write((tx) => {
      tx.run('ALTER TABLE conversations ADD COLUMN usage_input INTEGER');
      tx.run('ALTER TABLE conversations ADD COLUMN usage_output INTEGER');
      tx.run("UPDATE usage_conversations SET last = '{not json' WHERE conversation_id = 'c1'");
    }),
  );
  const store = await openStore(dir);
  t.after(() => store.close());
  assert.equal(schemaVersion(store.db), MIGRATIONS.length);
  const got = await answers(store, ids);
  assert.deepEqual({ ...got, conversations: got.conversations.filter((_, i) => i !== 1) }, { ...expected, conversations: expected.conversations.filter((_, i) => i !== 1) });
  assert.deepEqual(got.conversations[1], { ...expected.conversations[1], context_used: null, context_window: null });
});

test('a database the migration cannot read is refused with a clear error, and left as it was', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('usage-migration-damaged-');
  t.after(cleanup);
  await oldDatabase(dir, (store) =>
    store.db.write((tx) => {
      tx.run('ALTER TABLE usage_conversations RENAME COLUMN replies TO replies_lost');
    }),
  );
  await assert.rejects(openStore(dir), new RegExp(`could not be migrated from version 21 to ${MIGRATIONS.length} \\(migration 22: .*replies.*\\); nothing was changed`));
  const old = await openStore(dir, { migrations: OLD });
  t.after(() => old.close());
  assert.equal(schemaVersion(old.db), 21);
  assert.equal(old.db.get<{ n: number }>('SELECT count(*) AS n FROM usage_conversations')?.n, 4, 'the rows are still there');
});
