// A new service.db is made from the final schema (src/store/schema.ts) in one exec rather than by
// replaying every migration: these tests keep the two from drifting apart. Both share SQL constants, so
// each is also held to FROZEN_SCHEMA below, literal data: a wrong shared constant changes both sides
// alike and would pass a comparison of one with the other.
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

/** The schema as frozen below: a change to it is a change to every user's database, made on purpose. */
function assertFrozen(actual: { version: number; objects: SchemaRow[] }, made: string): void {
  const frozen = { version: FROZEN_VERSION, objects: FROZEN_SCHEMA.map(([type, name, tbl_name, sql]) => ({ type, name, tbl_name, sql })) };
  const literal = actual.objects.map((o) => `  ${JSON.stringify([o.type, o.name, o.tbl_name, o.sql])},`).join('\n');
  assert.deepEqual(
    actual,
    frozen,
    `${made} made a schema other than FROZEN_SCHEMA (version ${FROZEN_VERSION}). If the change is meant (a new migration), set FROZEN_VERSION to ${actual.version} and FROZEN_SCHEMA to:\n${literal}`,
  );
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
  assertFrozen(expected, 'the migrations');
  assertFrozen(schemaOf(built), 'src/store/schema.ts');
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

/**
 * sqlite_master of the latest schema (type, name, tbl_name, sql whitespace-normalised, by name) and its
 * user_version, as literal data: written out, never computed from src/store.
 */
const FROZEN_VERSION = 25;
const FROZEN_SCHEMA: ReadonlyArray<[string, string, string, string | null]> = [
  ['table', 'attachment_uses', 'attachment_uses', 'CREATE TABLE attachment_uses (attachment_id TEXT NOT NULL, conversation_id TEXT NOT NULL, PRIMARY KEY (attachment_id, conversation_id))'],
  [
    'table',
    'attachments',
    'attachments',
    'CREATE TABLE attachments (id TEXT PRIMARY KEY, hash TEXT NOT NULL, name TEXT NOT NULL, mime TEXT NOT NULL, kind TEXT NOT NULL, size INTEGER NOT NULL, uploader TEXT NOT NULL, created_at TEXT NOT NULL, conversation_id TEXT, uses_unknown INTEGER NOT NULL DEFAULT 0)',
  ],
  ['index', 'attachments_conversation', 'attachments', 'CREATE INDEX attachments_conversation ON attachments (conversation_id)'],
  ['table', 'audit_chain', 'audit_chain', 'CREATE TABLE audit_chain (name TEXT PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL)'],
  [
    'table',
    'audit_log',
    'audit_log',
    'CREATE TABLE audit_log (seq INTEGER PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, person_kind TEXT NOT NULL, person_name TEXT NOT NULL, via TEXT NOT NULL, address TEXT, conversation_id TEXT, summary TEXT NOT NULL, detail TEXT NOT NULL, hash TEXT NOT NULL)',
  ],
  ['index', 'audit_log_at', 'audit_log', 'CREATE INDEX audit_log_at ON audit_log (at)'],
  ['index', 'audit_log_conversation', 'audit_log', 'CREATE INDEX audit_log_conversation ON audit_log (conversation_id, seq) WHERE conversation_id IS NOT NULL'],
  ['index', 'audit_log_kind', 'audit_log', 'CREATE INDEX audit_log_kind ON audit_log (kind, seq)'],
  ['index', 'audit_log_person', 'audit_log', 'CREATE INDEX audit_log_person ON audit_log (person_name, seq)'],
  [
    'table',
    'conversations',
    'conversations',
    'CREATE TABLE conversations (id TEXT PRIMARY KEY, title TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, last_message TEXT, bytes INTEGER NOT NULL DEFAULT 0, plan TEXT, started_by TEXT, cold_seq INTEGER NOT NULL DEFAULT 0, cold_count INTEGER NOT NULL DEFAULT 0, hot INTEGER NOT NULL DEFAULT 0, usage_input INTEGER, usage_output INTEGER, usage_cached INTEGER, usage_cost_micro REAL, usage_unpriced INTEGER, usage_estimated INTEGER, usage_replies INTEGER, usage_last_at TEXT, usage_context_used INTEGER, usage_context_window INTEGER, unanswered TEXT)',
  ],
  ['index', 'conversations_hot', 'conversations', 'CREATE INDEX conversations_hot ON conversations (updated_at) WHERE hot = 1'],
  ['index', 'conversations_updated_at', 'conversations', 'CREATE INDEX conversations_updated_at ON conversations (updated_at)'],
  [
    'table',
    'devices',
    'devices',
    'CREATE TABLE devices (device_id TEXT PRIMARY KEY, device_name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, paired_at TEXT NOT NULL, last_seen TEXT, via TEXT NOT NULL, client_key TEXT)',
  ],
  [
    'table',
    'file_changes',
    'file_changes',
    'CREATE TABLE file_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL, turn_id TEXT NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL, root TEXT, path TEXT, before_hash TEXT, after_hash TEXT, detail TEXT, state TEXT NOT NULL, created_at TEXT NOT NULL, undone_at TEXT)',
  ],
  ['index', 'file_changes_path', 'file_changes', 'CREATE INDEX file_changes_path ON file_changes (root, path, seq)'],
  ['index', 'file_changes_state', 'file_changes', 'CREATE INDEX file_changes_state ON file_changes (state)'],
  ['index', 'file_changes_turn', 'file_changes', 'CREATE INDEX file_changes_turn ON file_changes (conversation_id, turn_id, seq)'],
  ['table', 'history_cold_trash', 'history_cold_trash', 'CREATE TABLE history_cold_trash (conversation_id TEXT PRIMARY KEY)'],
  ['table', 'history_trash', 'history_trash', 'CREATE TABLE history_trash (body_key INTEGER PRIMARY KEY)'],
  ['table', 'memory', 'memory', 'CREATE TABLE memory (id TEXT PRIMARY KEY, content TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)'],
  [
    'table',
    'messages',
    'messages',
    'CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, timestamp TEXT NOT NULL, tool_name TEXT, user_id TEXT, data TEXT, client_key TEXT, body_key INTEGER, bytes INTEGER NOT NULL DEFAULT 0, cut INTEGER NOT NULL DEFAULT 0)',
  ],
  ['index', 'messages_body_key', 'messages', 'CREATE UNIQUE INDEX messages_body_key ON messages (body_key) WHERE body_key IS NOT NULL'],
  ['index', 'messages_client_key', 'messages', 'CREATE UNIQUE INDEX messages_client_key ON messages (client_key) WHERE client_key IS NOT NULL'],
  ['index', 'messages_conversation_seq', 'messages', 'CREATE INDEX messages_conversation_seq ON messages (conversation_id, seq)'],
  ['index', 'messages_inline', 'messages', 'CREATE INDEX messages_inline ON messages (seq) WHERE body_key IS NULL'],
  ['index', 'messages_tool_uncut', 'messages', "CREATE INDEX messages_tool_uncut ON messages (timestamp) WHERE role = 'tool' AND cut = 0"],
  ['table', 'meta', 'meta', 'CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)'],
  [
    'table',
    'permission_requests',
    'permission_requests',
    'CREATE TABLE permission_requests (request_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, call_id TEXT, owner_only INTEGER NOT NULL, request TEXT NOT NULL, status TEXT NOT NULL, decision TEXT, decided_by TEXT, reason TEXT, resolved_ms INTEGER)',
  ],
  ['index', 'permission_requests_status', 'permission_requests', 'CREATE INDEX permission_requests_status ON permission_requests (status, resolved_ms)'],
  [
    'table',
    'push_devices',
    'push_devices',
    'CREATE TABLE push_devices (device_id TEXT PRIMARY KEY, device_name TEXT NOT NULL, principal TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL, events TEXT NOT NULL, content_blind INTEGER NOT NULL, last_delivery TEXT, failures INTEGER NOT NULL DEFAULT 0, person TEXT)',
  ],
  [
    'table',
    'registrations',
    'registrations',
    'CREATE TABLE registrations (machine_name TEXT PRIMARY KEY, public_key TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, e2e_v2 INTEGER NOT NULL DEFAULT 0)',
  ],
  ['table', 'retry_keys', 'retry_keys', 'CREATE TABLE retry_keys (seq INTEGER PRIMARY KEY AUTOINCREMENT, client_key TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL, message_id TEXT NOT NULL)'],
  ['index', 'retry_keys_conversation', 'retry_keys', 'CREATE INDEX retry_keys_conversation ON retry_keys (conversation_id)'],
  ['index', 'sqlite_autoindex_attachment_uses_1', 'attachment_uses', null],
  ['index', 'sqlite_autoindex_attachments_1', 'attachments', null],
  ['index', 'sqlite_autoindex_audit_chain_1', 'audit_chain', null],
  ['index', 'sqlite_autoindex_conversations_1', 'conversations', null],
  ['index', 'sqlite_autoindex_devices_1', 'devices', null],
  ['index', 'sqlite_autoindex_devices_2', 'devices', null],
  ['index', 'sqlite_autoindex_file_changes_1', 'file_changes', null],
  ['index', 'sqlite_autoindex_history_cold_trash_1', 'history_cold_trash', null],
  ['index', 'sqlite_autoindex_memory_1', 'memory', null],
  ['index', 'sqlite_autoindex_messages_1', 'messages', null],
  ['index', 'sqlite_autoindex_meta_1', 'meta', null],
  ['index', 'sqlite_autoindex_permission_requests_1', 'permission_requests', null],
  ['index', 'sqlite_autoindex_push_devices_1', 'push_devices', null],
  ['index', 'sqlite_autoindex_registrations_1', 'registrations', null],
  ['index', 'sqlite_autoindex_retry_keys_1', 'retry_keys', null],
  ['index', 'sqlite_autoindex_usage_1', 'usage', null],
  ['index', 'sqlite_autoindex_usage_days_1', 'usage_days', null],
  ['index', 'sqlite_autoindex_webhook_deliveries_1', 'webhook_deliveries', null],
  ['index', 'sqlite_autoindex_webhook_idempotency_1', 'webhook_idempotency', null],
  ['index', 'sqlite_autoindex_webhook_inbox_1', 'webhook_inbox', null],
  ['index', 'sqlite_autoindex_worktrees_1', 'worktrees', null],
  ['table', 'sqlite_sequence', 'sqlite_sequence', 'CREATE TABLE sqlite_sequence(name,seq)'],
  [
    'table',
    'usage',
    'usage',
    'CREATE TABLE usage (message_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, source TEXT NOT NULL, day TEXT NOT NULL, updated_at TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL, cached INTEGER NOT NULL, cost_micro REAL, estimated INTEGER NOT NULL, calls INTEGER NOT NULL, context_used INTEGER, context_window INTEGER)',
  ],
  ['index', 'usage_conversation', 'usage', 'CREATE INDEX usage_conversation ON usage (conversation_id, updated_at)'],
  ['index', 'usage_day', 'usage', 'CREATE INDEX usage_day ON usage (day, source)'],
  [
    'table',
    'usage_days',
    'usage_days',
    'CREATE TABLE usage_days (day TEXT NOT NULL, source TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL, cached INTEGER NOT NULL, cost_micro REAL NOT NULL, unpriced INTEGER NOT NULL, estimated INTEGER NOT NULL, replies INTEGER NOT NULL, PRIMARY KEY (day, source, provider, model))',
  ],
  [
    'table',
    'webhook_deliveries',
    'webhook_deliveries',
    "CREATE TABLE webhook_deliveries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, account TEXT NOT NULL, url TEXT NOT NULL, conversation_id TEXT NOT NULL, message_id TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, round_attempts INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, next_attempt_ms INTEGER, give_up_ms INTEGER NOT NULL, last_attempt_at TEXT, last_status INTEGER, last_error TEXT, finished_at TEXT, body_key INTEGER, kind TEXT NOT NULL DEFAULT 'reply')",
  ],
  ['index', 'webhook_deliveries_account', 'webhook_deliveries', 'CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account, seq)'],
  ['index', 'webhook_deliveries_body_key', 'webhook_deliveries', 'CREATE INDEX webhook_deliveries_body_key ON webhook_deliveries (body_key) WHERE body_key IS NOT NULL'],
  ['index', 'webhook_deliveries_due', 'webhook_deliveries', 'CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_ms)'],
  [
    'table',
    'webhook_idempotency',
    'webhook_idempotency',
    'CREATE TABLE webhook_idempotency (account TEXT NOT NULL, key TEXT NOT NULL, conversation_id TEXT NOT NULL, message_id TEXT NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY (account, key))',
  ],
  ['index', 'webhook_idempotency_created', 'webhook_idempotency', 'CREATE INDEX webhook_idempotency_created ON webhook_idempotency (created_ms)'],
  [
    'table',
    'webhook_inbox',
    'webhook_inbox',
    'CREATE TABLE webhook_inbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE, account TEXT NOT NULL, conversation_id TEXT NOT NULL, url TEXT NOT NULL, status TEXT NOT NULL, received_at TEXT NOT NULL, finished_at TEXT, reply_id TEXT, error TEXT, content TEXT NOT NULL, user_id TEXT, body_key INTEGER)',
  ],
  ['index', 'webhook_inbox_status', 'webhook_inbox', 'CREATE INDEX webhook_inbox_status ON webhook_inbox (status, seq)'],
  [
    'table',
    'worktrees',
    'worktrees',
    'CREATE TABLE worktrees (conversation_id TEXT PRIMARY KEY, repository TEXT NOT NULL, path TEXT NOT NULL, branch TEXT NOT NULL, base_branch TEXT, base_commit TEXT NOT NULL, state TEXT NOT NULL, created_at TEXT NOT NULL, changed_files INTEGER NOT NULL DEFAULT 0, base_moved INTEGER NOT NULL DEFAULT 0)',
  ],
];
