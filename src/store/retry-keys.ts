import type { Database, WriteOptions } from './database';

/**
 * A retry's client_retry_id with its sender (`client_key`, messages.ts clientKeyOf), kept with the message it
 * retried (migration 23), so a resend after a restart is answered, never run again
 * (commands/turns/retry-resends.ts). Each person's newest RETRY_KEYS_KEPT only; deleted with their conversation.
 */
export const RETRY_KEYS_TABLE_SQL = `CREATE TABLE retry_keys (seq INTEGER PRIMARY KEY AUTOINCREMENT, client_key TEXT NOT NULL UNIQUE, conversation_id TEXT NOT NULL, message_id TEXT NOT NULL);
  CREATE INDEX retry_keys_conversation ON retry_keys (conversation_id)`;

/** As many as the resends remembered in memory (chat-resends.ts REMEMBERED_CHATS). */
export const RETRY_KEYS_KEPT = 1000;

export interface RetryKey {
  conversation_id: string;
  message_id: string;
}

export class RetryKeysRepo {
  constructor(private readonly db: Database) {}

  /** The retry stored under this key (its sender's and client_retry_id), if any: from memory (sql.js), synchronously. */
  get(clientKey: string): RetryKey | undefined {
    return this.db.get<RetryKey>('SELECT conversation_id, message_id FROM retry_keys WHERE client_key = ?', [clientKey]);
  }

  /**
   * Stores a retry's key (its person's oldest beyond RETRY_KEYS_KEPT go in the same transaction). A retry writes it
   * with `deferSync` before the model is asked: durable with the turn's first commit (its tool round's or
   * its reply's), as a chat's user message is.
   */
  remember(clientKey: string, key: RetryKey, options?: WriteOptions): Promise<void> {
    return this.db.write((tx) => {
      tx.run('INSERT INTO retry_keys (client_key, conversation_id, message_id) VALUES (?, ?, ?)', [clientKey, key.conversation_id, key.message_id]);
      // Each person's newest only: another person's retries (a password user's) never push out the owner's.
      // Their keys lie between "person\0" and "person\u0001" (SQLite's text functions stop at a NUL; comparison does not).
      const person = clientKey.slice(0, clientKey.lastIndexOf('\u0000'));
      tx.run('DELETE FROM retry_keys WHERE seq IN (SELECT seq FROM retry_keys WHERE client_key >= ? AND client_key < ? ORDER BY seq DESC LIMIT -1 OFFSET ?)', [
        `${person}\u0000`,
        `${person}\u0001`,
        RETRY_KEYS_KEPT,
      ]);
    }, options);
  }
}
