// Usage rows (one per reply) leave sql.js with their conversation's metadata (issue 25: they grew with the
// history in sql.js' memory): per-message figures move to history.db, totals stay in sql.js as sums per
// day and per conversation, and every usage query answers as before the move. Real store, temp dirs.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { openStore } from '../../src/store/index';
import type { NewUsage, Store } from '../../src/store/index';
import { tempDir } from '../helpers/temp';
import { usageRowOf } from '../helpers/usage-rows';

const LIMIT = { timeout: 60_000 };
const DAY = 86_400_000;
const T0 = Date.now() - 10 * DAY;

function usageOf(c: string, i: number, priced: boolean): NewUsage {
  return usageRowOf(c, i, new Date(T0 + i * DAY + Number(c.slice(1)) * 1000).toISOString(), priced ? {} : { cost_micro: null });
}

/** Three conversations of four turns each (c1 with an unpriced reply), then one deleted. */
async function fill(store: Store): Promise<string[]> {
  const ids: string[] = [];
  for (const c of ['c0', 'c1', 'c2']) {
    await store.conversations.create({ id: c, title: c, source: c === 'c2' ? 'webhook:acme' : 'ws', created_at: new Date(T0).toISOString() });
    for (let i = 0; i < 4; i++) {
      const at = new Date(T0 + i * DAY).toISOString();
      await store.messages.appendMany([
        { id: `${c}-u${i}`, conversation_id: c, role: 'user', content: `question ${i}`, timestamp: at },
        { id: `${c}-a${i}`, conversation_id: c, role: 'assistant', content: `answer ${i}`, timestamp: at },
      ]);
      await store.usage.record(usageOf(c, i, !(c === 'c1' && i === 2)));
      ids.push(`${c}-a${i}`);
    }
  }
  return ids;
}

/** Every usage query the service makes (get_usage, budgets, a conversation's totals, per-message figures). */
async function answers(store: Store, ids: string[]) {
  const day = usageOf('c0', 1, true).day;
  return {
    byDay: store.usage.byDayAndModel('2000-01-01'),
    byDayWebhook: store.usage.byDayAndModel('2000-01-01', 'webhook:acme'),
    recentDays: store.usage.byDayAndModel(day),
    spent: [store.usage.spent('ws', day), store.usage.spent('webhook:acme', usageOf('c2', 3, true).day)],
    conversations: ['c0', 'c1', 'c2', 'nope'].map((c) => store.usage.ofConversation(c)),
    messages: [...(await store.usage.ofMessages([...ids, 'unknown'])).entries()].sort(([a], [b]) => a.localeCompare(b)),
  };
}

const usageRows = (store: Store) => store.db.get<{ n: number }>('SELECT count(*) AS n FROM usage')?.n ?? 0;

test('usage rows of cold conversations leave sql.js; get_usage, budgets, conversation totals and per-message figures answer as before', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('cold-usage-test-');
  t.after(cleanup);
  let store = await openStore(dir, { hotMessages: 0 });
  const ids = await fill(store);
  const before = await answers(store, ids);
  assert.equal(usageRows(store), 12);
  await store.maintenance.run();
  assert.equal(usageRows(store), 0, 'no usage row of a cold conversation left in sql.js');
  assert.deepEqual(await answers(store, ids), before);
  // A deleted conversation's spending still counts for the day (budgets), as before the move.
  await store.conversations.delete('c2');
  await store.maintenance.run();
  const afterDelete = await answers(store, ids);
  assert.deepEqual(afterDelete.byDay, before.byDay);
  assert.deepEqual(afterDelete.spent, before.spent);
  // New usage of a conversation that became active again adds to the moved totals.
  await store.close();
  store = await openStore(dir, { hotMessages: 0 });
  t.after(() => store.close());
  assert.deepEqual((await answers(store, ids)).byDay, before.byDay, 'the same after a reopen');
  await store.messages.append({ id: 'c0-a9', conversation_id: 'c0', role: 'assistant', content: 'later', timestamp: new Date().toISOString() });
  await store.usage.record({ ...usageOf('c0', 9, true), message_id: 'c0-a9', day: new Date().toISOString().slice(0, 10), updated_at: new Date().toISOString() });
  const c0 = store.usage.ofConversation('c0');
  assert.equal(c0?.sum.replies, 5);
  assert.equal(c0?.sum.input, 100 + 101 + 102 + 103 + 109);
  assert.equal(c0?.last.context_used, usageOf('c0', 9, true).context_used, 'the latest row gives the context figures');
  assert.equal(before.conversations[1]?.sum.cost_micro, null, 'an unpriced reply leaves the sum unpriced');
});

test('what sql.js keeps of a conversation whose messages and usage moved is its list row and a few sums: under 600 bytes', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('cold-usage-bytes-');
  t.after(cleanup);
  const store = await openStore(dir, { hotMessages: 0 });
  t.after(() => store.close());
  const used = () => {
    const pragma = (name: string) => Number(Object.values(store.db.get(`PRAGMA ${name}`) ?? {})[0]);
    return (pragma('page_count') - pragma('freelist_count')) * pragma('page_size');
  };
  await store.maintenance.run();
  const empty = used();
  // 1,000 conversations as clients make them (UUID ids, a title, a turn each), their usage recorded per reply.
  const n = 1000;
  const ids = Array.from({ length: n }, () => randomUUID());
  const at = new Date(T0).toISOString();
  await store.db.write((tx) => {
    for (const id of ids)
      tx.run('INSERT INTO conversations (id, title, source, created_at, updated_at, started_by) VALUES (?, ?, ?, ?, ?, ?)', [
        id,
        `Deploy the relay to staging, then check the logs`,
        'ws',
        at,
        at,
        'phone',
      ]);
  });
  await store.messages.appendMany(
    ids.flatMap((c, i) => [
      { id: randomUUID(), conversation_id: c, role: 'user' as const, content: `${'why does the deploy of the relay fail on the staging machine '.repeat(3)}${i}`, timestamp: at },
      { id: `${c}-a`, conversation_id: c, role: 'assistant' as const, content: `${'the relay cannot reach the kernel module, because '.repeat(3)}${i}`, timestamp: at },
    ]),
  );
  await store.db.write((tx) => {
    for (const c of ids) store.usage.recordIn(tx, { ...usageOf('c0', 1, true), message_id: `${c}-a`, conversation_id: c });
  });
  await store.maintenance.run();
  assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM usage')?.n, 0, 'every usage row moved');
  assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM messages')?.n, 0, "every message's metadata moved");
  const perConversation = (used() - empty) / n;
  t.diagnostic(`sql.js bytes per conversation: ${perConversation.toFixed(0)}`);
  // 868 bytes on the code before migration 22 (the latest usage row kept whole as JSON in usage_conversations), 459 after.
  assert.ok(perConversation < 600, `${perConversation.toFixed(0)} bytes a conversation`);
});

test('usage recorded while its row moves to history.db (a webhook message tried again adds to its reply) is not lost', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('cold-usage-during-');
  t.after(cleanup);
  let store = await openStore(dir, { hotMessages: 0 });
  t.after(() => store.close().catch(() => undefined));
  const ids = await fill(store);
  const before = await answers(store, ids);
  // The second try of c0's first turn adds to its row while the move awaits history.db's commit.
  const again = { ...usageOf('c0', 0, true), input: 7, output: 3, cached: 1, cost_micro: 5, context_used: 4321 };
  const put = store.history.putColdUsage.bind(store.history);
  let recorded: Promise<void> | undefined;
  store.history.putColdUsage = (rows) => {
    recorded ??= store.usage.record(again);
    return put(rows);
  };
  await store.maintenance.run();
  await recorded;
  assert.ok(recorded, 'the move ran');
  const expect = (a: typeof before) => {
    const c0 = a.conversations[0]!;
    return { input: c0.sum.input, output: c0.sum.output, cached: c0.sum.cached, cost: c0.sum.cost_micro, replies: c0.sum.replies };
  };
  const wanted = { ...expect(before), input: expect(before).input + 7, output: expect(before).output + 3, cached: expect(before).cached + 1, cost: expect(before).cost! + 5 };
  const message = async (s: Store) => (await s.usage.ofMessages(['c0-a0'])).get('c0-a0');
  const day = (s: Store) => s.usage.byDayAndModel('2000-01-01').reduce((n, r) => n + r.input, 0);
  const dayBefore = before.byDay.reduce((n, r) => n + r.input, 0);
  assert.deepEqual(expect(await answers(store, ids)), wanted, "the conversation's sums hold the second try");
  assert.equal(day(store), dayBefore + 7, "the days' sums hold it");
  assert.equal((await message(store))?.input, 100 + 7, "the reply's own figures hold it");
  // Moved at the next pass, and after a reopen.
  store.history.putColdUsage = put;
  await store.maintenance.run();
  assert.equal(usageRows(store), 0, 'moved at the next pass');
  await store.close();
  store = await openStore(dir, { hotMessages: 0 });
  assert.deepEqual(expect(await answers(store, ids)), wanted);
  assert.equal(day(store), dayBefore + 7);
  assert.equal((await message(store))?.input, 100 + 7);
  assert.equal((await message(store))?.context_used, 4321);
});
