// A new service.db is made from the final schema (src/store/schema.ts) in one exec rather than by
// replaying every migration: these tests keep the two from drifting apart.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Database, migrate, MIGRATIONS, schemaVersion } from '../../src/store/index';
import { SCHEMA_VERSION } from '../../src/store/schema';
import { tempDir } from '../helpers/temp';

const LIMIT = { timeout: 30_000 };

interface SchemaRow {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

/** sqlite_master by name, whitespace normalised (the order SQLite keeps them in does not matter), and the version. */
function schemaOf(db: Database): { version: number; objects: SchemaRow[] } {
  const objects = db.all<SchemaRow>('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name').map((row) => ({ ...row, sql: row.sql === null ? null : row.sql.replace(/\s+/g, ' ').trim() }));
  return { version: schemaVersion(db), objects };
}

/** Every table's rows: a migration that seeds rows must be in the final schema too. */
function rowsOf(db: Database): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const { name } of db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")) {
    out[name] = db.all(`SELECT * FROM "${name}" ORDER BY rowid`);
  }
  return out;
}

/** What to put in src/store/schema.ts: each table as migrated, then its indexes. */
function schemaText(objects: SchemaRow[]): string {
  const tables = objects.filter((o) => o.type === 'table' && o.sql !== null && o.name !== 'sqlite_sequence');
  return tables.flatMap((t) => [t.sql, ...objects.filter((o) => o.type !== 'table' && o.tbl_name === t.name && o.sql !== null).map((o) => o.sql)]).join(';\n') + ';';
}

async function withDb(t: { after: (fn: () => Promise<void>) => void }): Promise<Database> {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const db = await Database.open(dir);
  t.after(() => db.close());
  return db;
}

test('a new database made from the final schema equals one migrated from version 0', LIMIT, async (t) => {
  const replayed = await withDb(t);
  // A copy of the list: the final schema is used only for the project's own migrations.
  assert.equal((await migrate(replayed, [...MIGRATIONS])).fromSchema, false);
  const built = await withDb(t);
  const result = await migrate(built);
  assert.deepEqual(result, { from: 0, to: MIGRATIONS.length, fromSchema: true });

  const expected = schemaOf(replayed);
  assert.equal(expected.version, MIGRATIONS.length);
  assert.deepEqual(
    schemaOf(built),
    expected,
    `src/store/schema.ts does not make the schema the migrations make; its text should be:\n${schemaText(expected.objects)}\n(and SCHEMA_VERSION ${MIGRATIONS.length})`,
  );
  assert.deepEqual(rowsOf(built), rowsOf(replayed));
});

test('the final schema is of the latest migration: a new migration updates src/store/schema.ts too', () => {
  assert.equal(SCHEMA_VERSION, MIGRATIONS.length, 'add the new migration to src/store/schema.ts and set SCHEMA_VERSION (the schema test prints the text)');
});

test('a database made from the final schema opens again with the same schema (its one journal record replays)', LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const first = await Database.open(dir);
  await migrate(first);
  const before = schemaOf(first);
  await first.close();
  const again = await Database.open(dir);
  t.after(() => again.close());
  assert.deepEqual(schemaOf(again), before);
  assert.deepEqual(await migrate(again), { from: MIGRATIONS.length, to: MIGRATIONS.length, fromSchema: false });
});

test('a database that is not new is migrated by its migrations, not remade', LIMIT, async (t) => {
  const db = await withDb(t);
  await migrate(db, MIGRATIONS.slice(0, 10));
  const result = await migrate(db);
  assert.deepEqual(result, { from: 10, to: MIGRATIONS.length, fromSchema: false });
  assert.equal(schemaVersion(db), MIGRATIONS.length);
});
