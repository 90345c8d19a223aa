// Planned writes waiting at the same barrier (a turn's user message and its reply, at the reply's fdatasync)
// are applied in one transaction (s24, agent24: Database.applyTogether); one whose statements fail there is
// still the only one rolled back and voided, as when each had its own transaction: the others are kept,
// live and after a restart.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Database, PlannedOp } from '../../src/store/database';
import { openTable, tableValues, tempDir } from '../helpers/store-utils';

const LIMIT = { timeout: 60_000 };
const DEFER = { deferSync: true };
const INSERT_T = 'INSERT INTO t VALUES (?)';

const insert = (v: string): PlannedOp => ({ sql: INSERT_T, params: [v] });
/** A planned statement that runs, then is refused by its check (what a constraint or a lost row does). */
const refusedAfter = (v: string): PlannedOp => ({
  sql: INSERT_T,
  params: [v],
  check: () => {
    throw new Error(`refused ${v}`);
  },
});

async function settled(promises: Promise<void>[]): Promise<string[]> {
  return (await Promise.allSettled(promises)).map((r) => (r.status === 'fulfilled' ? 'ok' : String((r.reason as Error).message)));
}

for (const count of [2, 3, 4]) {
  for (let failing = -1; failing < count; failing += 1) {
    const what = failing < 0 ? 'none fails' : `write ${failing + 1} fails`;
    test(`${count} planned writes applied at one fdatasync: ${what}; the others are kept, live and after a restart`, LIMIT, async (t) => {
      const { dir, cleanup } = await tempDir('planned-together-');
      t.after(cleanup);
      let db: Database = await openTable(dir);
      t.after(() => db.close());
      await db.write((tx) => tx.run(INSERT_T, ['before']));
      const values = Array.from({ length: count }, (_, i) => `w${i + 1}`);
      // Each waits behind its record (sync deferred), so all of them are applied at the flush's fdatasync.
      const writes = values.map((v, i) => db.writePlanned(i === failing ? [insert(`${v}a`), refusedAfter(`${v}b`)] : [insert(v)], [], DEFER));
      const flushed = db.flush();
      const outcomes = await settled(writes);
      await flushed;
      const kept = values.filter((_, i) => i !== failing);
      assert.deepEqual(
        outcomes,
        values.map((v, i) => (i === failing ? `refused ${v}b` : 'ok')),
      );
      assert.deepEqual(tableValues(db), ['before', ...kept], 'live: the failing write rolled back alone');
      await db.write((tx) => tx.run(INSERT_T, ['after']));
      await db.close();
      db = await openTable(dir);
      assert.deepEqual(tableValues(db), ['before', ...kept, 'after'], 'replayed: its record voided, the others kept');
    });
  }
}
