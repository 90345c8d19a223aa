import type { Logger } from '../log/logger';
import { nullLogger } from '../log/logger';
import type { Database, WriteTx } from './database';
import { ATTACHMENT_USES_TABLE_SQL } from './attachments';
import { META_TABLE_SQL } from './replay';
import { CONVERSATION_USAGE_COLUMNS, USAGE_TABLE_SQL } from './usage';
import { AUDIT_TABLES_SQL } from './audit';
import { WORKTREES_TABLE_SQL } from './worktrees';
import { RETRY_KEYS_TABLE_SQL } from './retry-keys';
import { previewOf } from '../protocol/preview';
import { OWNER_PERSON } from '../protocol/sources';
import { displayName } from '../protocol/display-name';
import { clientKeyOf } from './messages';
import { SCHEMA_SQL, SCHEMA_VERSION } from './schema';

/** SQL (several statements allowed) or a function of the transaction. */
export type Migration = string | ((tx: WriteTx) => void);

/**
 * Schema versions, in order: entry i takes the database to version i + 1 (PRAGMA user_version).
 * To change the schema, append one entry; never edit a released one.
 */
export const MIGRATIONS: readonly Migration[] = [
  // 1
  `${META_TABLE_SQL};
  CREATE TABLE conversations (id TEXT PRIMARY KEY, title TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE INDEX conversations_updated_at ON conversations (updated_at);
  CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, timestamp TEXT NOT NULL, tool_name TEXT, user_id TEXT, data TEXT);
  CREATE INDEX messages_conversation_seq ON messages (conversation_id, seq);
  CREATE TABLE memory (id TEXT PRIMARY KEY, content TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE TABLE registrations (machine_name TEXT PRIMARY KEY, public_key TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);`,
  // 2: the webhook channel's inbox, Idempotency-Key answers and outbox (src/store/webhooks.ts).
  `CREATE TABLE webhook_inbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE, account TEXT NOT NULL, conversation_id TEXT NOT NULL, url TEXT NOT NULL, status TEXT NOT NULL, received_at TEXT NOT NULL, finished_at TEXT, reply_id TEXT, error TEXT, content TEXT NOT NULL, user_id TEXT);
  CREATE INDEX webhook_inbox_status ON webhook_inbox (status, seq);
  CREATE TABLE webhook_idempotency (account TEXT NOT NULL, key TEXT NOT NULL, conversation_id TEXT NOT NULL, message_id TEXT NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY (account, key));
  CREATE INDEX webhook_idempotency_created ON webhook_idempotency (created_ms);
  CREATE TABLE webhook_deliveries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, account TEXT NOT NULL, url TEXT NOT NULL, conversation_id TEXT NOT NULL, message_id TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, round_attempts INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, next_attempt_ms INTEGER, give_up_ms INTEGER NOT NULL, last_attempt_at TEXT, last_status INTEGER, last_error TEXT, finished_at TEXT);
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_ms);
  CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account, seq);`,
  // 3: Web Push devices (src/store/push-devices.ts).
  `CREATE TABLE push_devices (device_id TEXT PRIMARY KEY, device_name TEXT NOT NULL, principal TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL, events TEXT NOT NULL, content_blind INTEGER NOT NULL, last_delivery TEXT, failures INTEGER NOT NULL DEFAULT 0);`,
  // 4: permission requests waiting for a person, and recently decided ones (src/store/permission-requests.ts).
  `CREATE TABLE permission_requests (request_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, call_id TEXT, owner_only INTEGER NOT NULL, request TEXT NOT NULL, status TEXT NOT NULL, decision TEXT, decided_by TEXT, reason TEXT, resolved_ms INTEGER);
  CREATE INDEX permission_requests_status ON permission_requests (status, resolved_ms);`,
  // 5: a user message's client_message_id with its sender, so a resent chat is recognised, also after a restart (commands/turns/chat-resends.ts).
  `ALTER TABLE messages ADD COLUMN client_key TEXT;
  CREATE UNIQUE INDEX messages_client_key ON messages (client_key) WHERE client_key IS NOT NULL;`,
  // 6: paired devices, each with its own credential (src/store/devices.ts).
  `CREATE TABLE devices (device_id TEXT PRIMARY KEY, device_name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, paired_at TEXT NOT NULL, last_seen TEXT, via TEXT NOT NULL);`,
  // 7: token usage and cost per reply, in its own table keyed by message id (src/store/usage.ts).
  USAGE_TABLE_SQL,
  // 8: files the agent wrote, with their before-images in the blob store, and tools whose effects are not recorded, per turn, for undo_turn (src/store/file-changes.ts).
  `CREATE TABLE file_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL, turn_id TEXT NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL, root TEXT, path TEXT, before_hash TEXT, after_hash TEXT, detail TEXT, state TEXT NOT NULL, created_at TEXT NOT NULL, undone_at TEXT);
  CREATE INDEX file_changes_turn ON file_changes (conversation_id, turn_id, seq);
  CREATE INDEX file_changes_path ON file_changes (root, path, seq);
  CREATE INDEX file_changes_state ON file_changes (state);`,
  // 9: a relay-paired device's end-to-end client key, unregistered when the device is revoked (src/store/devices.ts).
  `ALTER TABLE devices ADD COLUMN client_key TEXT;`,
  // 10: uploaded files, their bytes in the blob store (src/store/attachments.ts).
  `CREATE TABLE attachments (id TEXT PRIMARY KEY, hash TEXT NOT NULL, name TEXT NOT NULL, mime TEXT NOT NULL, kind TEXT NOT NULL, size INTEGER NOT NULL, uploader TEXT NOT NULL, created_at TEXT NOT NULL, conversation_id TEXT);
  CREATE INDEX attachments_conversation ON attachments (conversation_id);`,
  // 11: message bodies move to history.db (src/store/history/); sql.js keeps their metadata, a byte
  // size per message and conversation, and each conversation's preview. Bodies already stored stay
  // inline until the history maintenance moves them (crash-safe, batch by batch).
  (tx) => {
    tx.run(`ALTER TABLE messages ADD COLUMN body_key INTEGER;
      ALTER TABLE messages ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE messages ADD COLUMN cut INTEGER NOT NULL DEFAULT 0;
      UPDATE messages SET bytes = length(CAST(content AS BLOB)) + coalesce(length(CAST(data AS BLOB)), 0);
      CREATE INDEX messages_inline ON messages (seq) WHERE body_key IS NULL;
      CREATE UNIQUE INDEX messages_body_key ON messages (body_key) WHERE body_key IS NOT NULL;
      CREATE INDEX messages_tool_uncut ON messages (timestamp) WHERE role = 'tool' AND cut = 0;
      ALTER TABLE conversations ADD COLUMN last_message TEXT;
      ALTER TABLE conversations ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
      UPDATE conversations SET bytes = coalesce((SELECT sum(bytes) FROM messages WHERE conversation_id = conversations.id), 0);
      CREATE TABLE history_trash (body_key INTEGER PRIMARY KEY);`);
    const lasts = tx.all<{ id: string; content: string }>(
      "SELECT c.id, (SELECT m.content FROM messages m WHERE m.conversation_id = c.id AND m.role IN ('user', 'assistant') ORDER BY m.seq DESC LIMIT 1) AS content FROM conversations c",
    );
    for (const { id, content } of lasts) {
      if (content !== null) tx.run('UPDATE conversations SET last_message = ? WHERE id = ?', [previewOf(content), id]);
    }
  },
  // 12: people (protocol/sources.ts personOf): what was keyed by source and credential kind is keyed by
  // the person. The access token's rows become the owner's; a password user's cannot be told apart from
  // another's, so they become nobody's (an unsent upload, a resend key) or, for a push device, `person`
  // stays NULL: the first password user to subscribe it again takes it (push-devices.ts).
  (tx) => {
    tx.run('ALTER TABLE push_devices ADD COLUMN person TEXT');
    tx.run(`UPDATE push_devices SET person = ? WHERE principal = 'access'`, [OWNER_PERSON]);
    for (const { id, uploader } of tx.all<{ id: string; uploader: string }>("SELECT id, uploader FROM attachments WHERE uploader <> 'agent'")) {
      const [, principal] = uploader.split('\u0000');
      tx.run('UPDATE attachments SET uploader = ? WHERE id = ?', [principal === 'access' ? OWNER_PERSON : `legacy:${uploader}`, id]);
    }
    for (const { seq, client_key } of tx.all<{ seq: number; client_key: string }>('SELECT seq, client_key FROM messages WHERE client_key IS NOT NULL')) {
      const [, principal, ...rest] = client_key.split('\u0000');
      // OR IGNORE: the owner's id already moved from another source's row keeps the first (a resend finds one).
      if (principal === 'access') tx.run('UPDATE OR IGNORE messages SET client_key = ? WHERE seq = ?', [clientKeyOf(OWNER_PERSON, rest.join('\u0000')), seq]);
    }
    // Names stored before they were cleaned at the edge lose their bidi and control characters too.
    for (const [table, key, column] of [
      ['attachments', 'id', 'name'],
      ['push_devices', 'device_id', 'device_name'],
      ['devices', 'device_id', 'device_name'],
      ['conversations', 'id', 'title'],
    ]) {
      for (const row of tx.all<{ k: string; v: string }>(`SELECT ${key} AS k, ${column} AS v FROM ${table}`)) {
        const clean = displayName(row.v).trim();
        if (clean !== row.v) tx.run(`UPDATE ${table} SET ${column} = ? WHERE ${key} = ?`, [clean || 'unnamed', row.k]);
      }
    }
  },
  // 13: a webhook message waiting in the inbox keeps its body in history.db (body_key, handed to its
  // message when admitted); `content` keeps only its preview (src/store/webhooks.ts).
  `ALTER TABLE webhook_inbox ADD COLUMN body_key INTEGER;`,
  // 14: the audit log, append-only and hash-chained (src/store/audit.ts).
  AUDIT_TABLES_SQL,
  // 15: the conversation's latest plan (the `todo` tool's checklist, JSON), deleted with its row.
  `ALTER TABLE conversations ADD COLUMN plan TEXT;`,
  // 16: conversations that work in their own git worktree (issue 24, src/store/worktrees.ts).
  WORKTREES_TABLE_SQL,
  // 17: who started a conversation, as people read it (a paired device's name, a password user's,
  // `editor`): its list row says so rather than the transport's `LAN` (issue 23).
  `ALTER TABLE conversations ADD COLUMN started_by TEXT;`,
  // 18: the metadata of the least recently active conversations' messages moves to history.db (issue 25;
  // store/history/cold.ts).
  // `cold_seq`: the highest seq moved (reads ask history.db for the rows at or below it), `cold_count`:
  // how many rows moved (so counting needs no read of history.db); `hot`: the
  // conversation has rows in sql.js (set by every stored message). The moves themselves are the
  // history maintenance's (crash-safe and idempotent batches), for an existing database too.
  `ALTER TABLE conversations ADD COLUMN cold_seq INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE conversations ADD COLUMN cold_count INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE conversations ADD COLUMN hot INTEGER NOT NULL DEFAULT 0;
  UPDATE conversations SET hot = 1 WHERE EXISTS (SELECT 1 FROM messages WHERE conversation_id = conversations.id);
  CREATE INDEX conversations_hot ON conversations (updated_at) WHERE hot = 1;
  CREATE TABLE history_cold_trash (conversation_id TEXT PRIMARY KEY);`,
  // 19: usage rows (one per reply) leave sql.js with their conversation's metadata (store/usage.ts
  // moveCold): their figures go to history.db, their sums stay here per day (get_usage, budgets) and per
  // conversation (its totals; `last`: its latest row as JSON, whose context figures are the conversation's).
  `CREATE TABLE usage_days (day TEXT NOT NULL, source TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL, cached INTEGER NOT NULL, cost_micro REAL NOT NULL, unpriced INTEGER NOT NULL, estimated INTEGER NOT NULL, replies INTEGER NOT NULL, PRIMARY KEY (day, source, provider, model));
  CREATE TABLE usage_conversations (conversation_id TEXT PRIMARY KEY, input INTEGER NOT NULL, output INTEGER NOT NULL, cached INTEGER NOT NULL, cost_micro REAL NOT NULL, unpriced INTEGER NOT NULL, estimated INTEGER NOT NULL, replies INTEGER NOT NULL, last TEXT NOT NULL);`,
  // 20: a registered client key that has completed an e2e v2 handshake (or was paired through a v2
  // hello) is refused v1 hellos from then on: v1 keys come from the long-term keys alone, so a copy of
  // the machine's store could open a v1 tunnel as that phone (src/transport/relay-link/client-keys.ts).
  `ALTER TABLE registrations ADD COLUMN e2e_v2 INTEGER NOT NULL DEFAULT 0;`,
  // 21: a webhook delivery keeps its body in history.db (`body_key`) until delivered, not in sql.js's memory
  // for up to its retry window (store/webhooks.ts); a row written before keeps its body inline. Its kind
  // (list_deliveries) was read from the body: it is a column now, set here for the rows written before.
  `ALTER TABLE webhook_deliveries ADD COLUMN body_key INTEGER;
  ALTER TABLE webhook_deliveries ADD COLUMN kind TEXT NOT NULL DEFAULT 'reply';
  UPDATE webhook_deliveries SET kind = 'error' WHERE json_valid(body) AND json_extract(body, '$.status') = 'error';
  CREATE INDEX webhook_deliveries_body_key ON webhook_deliveries (body_key) WHERE body_key IS NOT NULL;`,
  // 22: a conversation's moved usage (issue 25: what sql.js holds per conversation) becomes columns of its
  // row: sums and the latest moved row's context figures and time, no longer a `usage_conversations` row
  // keeping that row whole as JSON (store/usage.ts CONVERSATION_USAGE_COLUMNS). Rows of deleted
  // conversations (left there before) go with the table; a `last` that is not JSON keeps its sums, its
  // context figures read as unknown. Finishes a database where some columns were added already.
  (tx) => {
    const present = new Set(tx.all<{ name: string }>("SELECT name FROM pragma_table_info('conversations')").map((c) => c.name));
    for (const [name, type] of CONVERSATION_USAGE_COLUMNS) if (!present.has(name)) tx.run(`ALTER TABLE conversations ADD COLUMN ${name} ${type}`);
    if (tx.all("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'usage_conversations'").length === 0) return;
    const last = (path: string, types: string) => `CASE WHEN json_valid(u.last) AND json_type(u.last, '$.${path}') IN (${types}) THEN json_extract(u.last, '$.${path}') END`;
    const value: Record<string, string> = {
      usage_input: 'u.input',
      usage_output: 'u.output',
      usage_cached: 'u.cached',
      usage_cost_micro: 'u.cost_micro',
      usage_unpriced: 'u.unpriced',
      usage_estimated: 'u.estimated',
      usage_replies: 'u.replies',
      usage_last_at: last('updated_at', "'text'"),
      usage_context_used: last('context_used', "'integer', 'real'"),
      usage_context_window: last('context_window', "'integer', 'real'"),
    };
    // UPDATE ... FROM (a join): the whole migration took 3.4-4.6 s in sql.js for 100,828 conversations at load 14, 6.1-6.4 s with a row-value subquery.
    tx.run(
      `UPDATE conversations SET ${Object.entries(value)
        .map(([name, v]) => `${name} = ${v}`)
        .join(', ')} FROM usage_conversations u WHERE u.conversation_id = conversations.id`,
    );
    tx.run('DROP TABLE usage_conversations');
  },
  // 23: a retry's client_retry_id with its sender and the message it retried, so a retry's resend after a
  // restart is answered, not run again (src/store/retry-keys.ts, commands/turns/retry-resends.ts).
  RETRY_KEYS_TABLE_SQL,
  // 24: why the conversation's last turn left its message unanswered (failed or stopped, JSON: get_messages'
  // `unanswered`), so a page drawn afresh says which (src/store/conversations.ts setUnanswered).
  `ALTER TABLE conversations ADD COLUMN unanswered TEXT;`,
  // 25: the other conversations that carry an attachment sent again, so deleting its first leaves it to
  // them (src/store/attachments.ts dropConversationAttachments; s33, blobs33). An attachment bound before
  // (`uses_unknown`) may be carried by another conversation nothing recorded (only its message's body in
  // history.db says so): a deletion leaves its row and bytes, as every deletion did before.
  `${ATTACHMENT_USES_TABLE_SQL};
   ALTER TABLE attachments ADD COLUMN uses_unknown INTEGER NOT NULL DEFAULT 0;
   UPDATE attachments SET uses_unknown = 1 WHERE conversation_id IS NOT NULL;`,
];

export function schemaVersion(db: Database): number {
  return Number(db.get<{ user_version: number }>('PRAGMA user_version')?.user_version ?? 0);
}

/** A database with nothing in it yet but the `meta` table every open makes (Database.open). */
function isEmpty(db: Database): boolean {
  return db.get("SELECT 1 AS x FROM sqlite_master WHERE name NOT IN ('meta', 'sqlite_autoindex_meta_1') LIMIT 1") === undefined;
}

/**
 * Brings the schema to the latest version in one journaled transaction: a new data directory's start
 * pays one fsync rather than one per version (issue 25), and a failing migration leaves the schema at
 * the version it had (all or nothing), as user_version is set in the same transaction. A new, empty
 * database with the project's migrations is made from the final schema (schema.ts) in one exec instead
 * of replaying them (`fromSchema`); migrations after SCHEMA_VERSION, if any, are replayed after it.
 */
export async function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS, logger: Logger = nullLogger): Promise<{ from: number; to: number; fromSchema: boolean }> {
  const from = schemaVersion(db);
  if (from > migrations.length) {
    throw new Error(`the database schema is version ${from}, newer than this version of the program knows (${migrations.length})`);
  }
  const fromSchema = from === 0 && migrations === MIGRATIONS && SCHEMA_VERSION <= migrations.length && isEmpty(db);
  if (from < migrations.length) {
    await db.write((tx) => {
      let version = from;
      if (fromSchema) {
        tx.run(SCHEMA_SQL);
        version = SCHEMA_VERSION;
        tx.run(`PRAGMA user_version = ${version}`);
      }
      for (version++; version <= migrations.length; version++) {
        const migration = migrations[version - 1];
        try {
          if (typeof migration === 'string') tx.run(migration);
          else migration(tx);
        } catch (err) {
          // Nothing is changed: the transaction is rolled back whole and the database stays at version `from`.
          throw new Error(`the database schema could not be migrated from version ${from} to ${migrations.length} (migration ${version}: ${(err as Error).message}); nothing was changed`, {
            cause: err,
          });
        }
        tx.run(`PRAGMA user_version = ${version}`);
      }
    });
    logger.info('store.migrated', { from, to: migrations.length, from_schema: fromSchema });
  }
  return { from, to: Math.max(from, migrations.length), fromSchema };
}
