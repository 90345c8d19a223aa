// The schema of service.db at the latest version, for a new database: made in one exec instead of
// replaying every migration (ALTER TABLE makes SQLite parse the whole schema again each time; the
// largest CPU cost of a new data directory's start, issue 25). The migrations stay, for existing
// databases. test/store/schema.test.ts checks that a database made from this text equals one migrated
// from version 0 (sqlite_master's sql, user_version, rows), and prints the text to put here when they
// differ: after a new migration, update this file and SCHEMA_VERSION with it.
import { AUDIT_TABLES_SQL } from './audit';
import { META_TABLE_SQL } from './replay';
import { CONVERSATION_USAGE_COLUMNS, USAGE_TABLE_SQL } from './usage';
import { WORKTREES_TABLE_SQL } from './worktrees';
import { RETRY_KEYS_TABLE_SQL } from './retry-keys';
import { ATTACHMENT_USES_TABLE_SQL } from './attachments';

/** The migration version (PRAGMA user_version) SCHEMA_SQL is the schema of. */
export const SCHEMA_VERSION = 25;

/** Each table as sqlite_master holds it after the migrations (columns they added included), with its indexes. */
export const SCHEMA_SQL = `${META_TABLE_SQL};
  CREATE TABLE conversations (id TEXT PRIMARY KEY, title TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, last_message TEXT, bytes INTEGER NOT NULL DEFAULT 0, plan TEXT, started_by TEXT, cold_seq INTEGER NOT NULL DEFAULT 0, cold_count INTEGER NOT NULL DEFAULT 0, hot INTEGER NOT NULL DEFAULT 0, ${CONVERSATION_USAGE_COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ')}, unanswered TEXT);
  CREATE INDEX conversations_updated_at ON conversations (updated_at);
  CREATE INDEX conversations_hot ON conversations (updated_at) WHERE hot = 1;
  CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, timestamp TEXT NOT NULL, tool_name TEXT, user_id TEXT, data TEXT, client_key TEXT, body_key INTEGER, bytes INTEGER NOT NULL DEFAULT 0, cut INTEGER NOT NULL DEFAULT 0);
  CREATE INDEX messages_conversation_seq ON messages (conversation_id, seq);
  CREATE UNIQUE INDEX messages_client_key ON messages (client_key) WHERE client_key IS NOT NULL;
  CREATE INDEX messages_inline ON messages (seq) WHERE body_key IS NULL;
  CREATE UNIQUE INDEX messages_body_key ON messages (body_key) WHERE body_key IS NOT NULL;
  CREATE INDEX messages_tool_uncut ON messages (timestamp) WHERE role = 'tool' AND cut = 0;
  CREATE TABLE memory (id TEXT PRIMARY KEY, content TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE TABLE registrations (machine_name TEXT PRIMARY KEY, public_key TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, e2e_v2 INTEGER NOT NULL DEFAULT 0);
  CREATE TABLE webhook_inbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE, account TEXT NOT NULL, conversation_id TEXT NOT NULL, url TEXT NOT NULL, status TEXT NOT NULL, received_at TEXT NOT NULL, finished_at TEXT, reply_id TEXT, error TEXT, content TEXT NOT NULL, user_id TEXT, body_key INTEGER);
  CREATE INDEX webhook_inbox_status ON webhook_inbox (status, seq);
  CREATE TABLE webhook_idempotency (account TEXT NOT NULL, key TEXT NOT NULL, conversation_id TEXT NOT NULL, message_id TEXT NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY (account, key));
  CREATE INDEX webhook_idempotency_created ON webhook_idempotency (created_ms);
  CREATE TABLE webhook_deliveries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, account TEXT NOT NULL, url TEXT NOT NULL, conversation_id TEXT NOT NULL, message_id TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, round_attempts INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, next_attempt_ms INTEGER, give_up_ms INTEGER NOT NULL, last_attempt_at TEXT, last_status INTEGER, last_error TEXT, finished_at TEXT, body_key INTEGER, kind TEXT NOT NULL DEFAULT 'reply');
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_ms);
  CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account, seq);
  CREATE INDEX webhook_deliveries_body_key ON webhook_deliveries (body_key) WHERE body_key IS NOT NULL;
  CREATE TABLE push_devices (device_id TEXT PRIMARY KEY, device_name TEXT NOT NULL, principal TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL, events TEXT NOT NULL, content_blind INTEGER NOT NULL, last_delivery TEXT, failures INTEGER NOT NULL DEFAULT 0, person TEXT);
  CREATE TABLE permission_requests (request_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, call_id TEXT, owner_only INTEGER NOT NULL, request TEXT NOT NULL, status TEXT NOT NULL, decision TEXT, decided_by TEXT, reason TEXT, resolved_ms INTEGER);
  CREATE INDEX permission_requests_status ON permission_requests (status, resolved_ms);
  CREATE TABLE devices (device_id TEXT PRIMARY KEY, device_name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, paired_at TEXT NOT NULL, last_seen TEXT, via TEXT NOT NULL, client_key TEXT);
  CREATE TABLE file_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL, turn_id TEXT NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL, root TEXT, path TEXT, before_hash TEXT, after_hash TEXT, detail TEXT, state TEXT NOT NULL, created_at TEXT NOT NULL, undone_at TEXT);
  CREATE INDEX file_changes_turn ON file_changes (conversation_id, turn_id, seq);
  CREATE INDEX file_changes_path ON file_changes (root, path, seq);
  CREATE INDEX file_changes_state ON file_changes (state);
  CREATE TABLE attachments (id TEXT PRIMARY KEY, hash TEXT NOT NULL, name TEXT NOT NULL, mime TEXT NOT NULL, kind TEXT NOT NULL, size INTEGER NOT NULL, uploader TEXT NOT NULL, created_at TEXT NOT NULL, conversation_id TEXT, uses_unknown INTEGER NOT NULL DEFAULT 0);
  CREATE INDEX attachments_conversation ON attachments (conversation_id);
  CREATE TABLE history_trash (body_key INTEGER PRIMARY KEY);
  CREATE TABLE history_cold_trash (conversation_id TEXT PRIMARY KEY);
  CREATE TABLE usage_days (day TEXT NOT NULL, source TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL, cached INTEGER NOT NULL, cost_micro REAL NOT NULL, unpriced INTEGER NOT NULL, estimated INTEGER NOT NULL, replies INTEGER NOT NULL, PRIMARY KEY (day, source, provider, model));
  ${USAGE_TABLE_SQL};
  ${AUDIT_TABLES_SQL}
  ${WORKTREES_TABLE_SQL};
  ${RETRY_KEYS_TABLE_SQL};
  ${ATTACHMENT_USES_TABLE_SQL};`;
