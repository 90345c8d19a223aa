import { NONE_HELD, type AttachmentHolds } from './attachment-holds';
import { dropConversationAttachments } from './attachments';
import type { Database, SqlParamInput, WriteOptions, WriteTx } from './database';
import type { ConversationRow, NewConversation } from './types';
import { wellFormed } from '../protocol/code-points';
import { Plan } from '../protocol/plan';
import { UnansweredTurn } from '../protocol/chat';
import { ReadMemo } from './read-memo';

/** The conversation row's columns that hold a value as JSON, read through a schema. */
type JsonColumn = 'plan' | 'unanswered';

export interface ListConversationsOptions {
  limit: number;
  /** An `updated_at` cursor: only conversations strictly older than it. */
  before?: string;
  source?: string;
}

const COLUMNS = 'id, title, source, created_at, updated_at, last_message, started_by';

/**
 * The one shape of statement that names conversations and keeps every row's id and source: an UPDATE of
 * one row by id whose assignments name neither (a message's append, a touch, a plan, history's counts).
 */
const KEEPS_OWNERS = /^UPDATE conversations SET (?:(?!\b(?:id|source)\b)[^;])+ WHERE id = \?$/i;

/** Whether a write statement may change which conversations exist or whose they are. */
export function touchesOwners(sql: string): boolean {
  return /\bconversations\b/i.test(sql) && !KEEPS_OWNERS.test(sql);
}

export class ConversationsRepo {
  /** Conversations' owners as read, kept while no write could change one (read-memo.ts): a turn's check reads none. */
  private readonly owners: ReadMemo<string | undefined>;

  constructor(
    private readonly db: Database,
    /** Attachments chats waiting in line hold: a deletion leaves their rows (dropConversationAttachments). */
    private readonly holds: AttachmentHolds,
    /** Called after a delete put message bodies in `history_trash` (history/maintenance.ts frees them). */
    private readonly onTrash: () => void = () => {},
  ) {
    this.owners = new ReadMemo(db, touchesOwners, (id) => this.db.get<{ source: string }>('SELECT source FROM conversations WHERE id = ?', [id])?.source);
  }

  /**
   * Starts a conversation; `updated_at` starts at `created_at`. Throws if the id exists. `options`:
   * Database.write's (a turn's new conversation defers its sync with its first message). Its title is
   * stored well-formed (code-points.ts wellFormed: sql.js's UTF-8 binding would read a lone surrogate back
   * as three U+FFFD), as a message's text (messages.ts checkMessage).
   */
  async create(c: NewConversation, options?: WriteOptions): Promise<void> {
    await this.db.write((tx) => {
      tx.run('INSERT INTO conversations (id, title, source, created_at, updated_at, started_by) VALUES (?, ?, ?, ?, ?, ?)', [
        c.id,
        wellFormed(c.title),
        c.source,
        c.created_at,
        c.created_at,
        c.started_by ?? null,
      ]);
    }, options);
  }

  get(id: string): ConversationRow | undefined {
    return this.db.get<ConversationRow>(`SELECT ${COLUMNS} FROM conversations WHERE id = ?`, [id]);
  }

  /** Who the conversation belongs to (its `source`: protocol's canAccess), or undefined when there is none: a check that needs no more of the row. */
  sourceOf(id: string): string | undefined {
    return this.owners.get(id);
  }

  /** Newest activity first; equal `updated_at` ordered by id (descending) so pages are stable. */
  list(options: ListConversationsOptions): ConversationRow[] {
    const limit = Math.floor(options.limit);
    if (!(limit > 0)) return [];
    const where: string[] = [];
    const params: string[] = [];
    if (options.before !== undefined) {
      where.push('updated_at < ?');
      params.push(options.before);
    }
    if (options.source !== undefined) {
      where.push('source = ?');
      params.push(options.source);
    }
    const filter = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    return this.db.all<ConversationRow>(`SELECT ${COLUMNS} FROM conversations${filter} ORDER BY updated_at DESC, id DESC LIMIT ?`, [...params, limit]);
  }

  /**
   * Deletes the conversation (trashConversation: gone from every reader at once); false if it did not
   * exist. Its messages are freed by the history maintenance afterwards, in short batches (a conversation
   * of 20,000 messages deleted in this one transaction held the loop 50-140 ms: bench/delete-stall-ab.ts).
   */
  async delete(id: string): Promise<boolean> {
    const deleted = await this.db.write((tx) => trashConversation(tx, id, this.holds));
    this.onTrash();
    return deleted;
  }

  /** Keeps the conversation's latest plan (the whole checklist); false if the conversation does not exist. */
  setPlan(id: string, plan: Plan): Promise<boolean> {
    return this.setJson(id, 'plan', plan);
  }

  /** The latest plan; undefined when none was written (or the stored one no longer reads as a plan). */
  planOf(id: string): Plan | undefined {
    return this.jsonOf(id, 'plan', Plan);
  }

  /**
   * Keeps why the conversation's last turn left its user message unanswered (failed, stopped), for a page
   * drawn afresh (get_messages' `unanswered`). Not cleared when a later turn answers: a reader takes it
   * only for the last user message with no reply after it. False if the conversation does not exist.
   */
  setUnanswered(id: string, turn: UnansweredTurn): Promise<boolean> {
    return this.setJson(id, 'unanswered', turn);
  }

  /** What setUnanswered kept last; undefined when nothing was (or it no longer reads as one). */
  unansweredOf(id: string): UnansweredTurn | undefined {
    return this.jsonOf(id, 'unanswered', UnansweredTurn);
  }

  /** A JSON column of the conversation's row written whole; false if the conversation does not exist. */
  private setJson(id: string, column: JsonColumn, value: unknown): Promise<boolean> {
    return this.db.write((tx) => tx.run(`UPDATE conversations SET ${column} = ? WHERE id = ?`, [JSON.stringify(value), id]).changes > 0);
  }

  /** A JSON column as `schema` reads it; undefined when empty, not JSON, or not of that shape (an older or damaged value). */
  private jsonOf<T>(id: string, column: JsonColumn, schema: { safeParse(value: unknown): { success: true; data: T } | { success: false } }): T | undefined {
    const text = this.db.get<Record<JsonColumn, string | null>>(`SELECT ${column} FROM conversations WHERE id = ?`, [id])?.[column];
    if (!text) return undefined;
    try {
      const parsed = schema.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** Sets `updated_at`; false if the conversation does not exist. */
  touch(id: string, updatedAt: string): Promise<boolean> {
    return this.db.write((tx) => tx.run('UPDATE conversations SET updated_at = ? WHERE id = ?', [updatedAt, id]).changes > 0);
  }
}

/**
 * Deletes a conversation, as one step every reader sees at once: its row goes (so it is no longer listed,
 * its messages no longer read (messages.ts reads none of a conversation without its row) and a message to
 * it is refused as not found), with its turns' undo records, its attachments and its retries' keys (the
 * blobs they referred to are freed by the maintenance's blob collection: blob-collection.ts). Its messages left (rows
 * in sql.js, cold rows in history.db: `cold_seq`) are noted in `history_cold_trash` in the same
 * transaction: the maintenance frees them in batches afterwards (history/maintenance.ts `emptyDeleted`),
 * also after a crash. Retention and delete_conversation both delete this way.
 */
export function trashConversation(tx: WriteTx, id: string, heldAttachments: Pick<AttachmentHolds, 'has'> = NONE_HELD): boolean {
  tx.run('INSERT OR IGNORE INTO history_cold_trash (conversation_id) SELECT id FROM conversations WHERE id = ? AND (cold_seq > 0 OR EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?))', [
    id,
    id,
  ]);
  tx.run('DELETE FROM file_changes WHERE conversation_id = ?', [id]);
  // Its attachments: no one reads them any more (not even their uploader) unless another conversation carries them too.
  dropConversationAttachments(tx, id, heldAttachments);
  // Its retries' keys: after a restart a resend of one is answered not_found, as a chat's of a deleted
  // conversation (until then the resends' memory still answers its sender with the first result).
  tx.run('DELETE FROM retry_keys WHERE conversation_id = ?', [id]);
  return tx.run('DELETE FROM conversations WHERE id = ?', [id]).changes > 0;
}

/** Deletes the messages matching `where`, their bodies' keys kept in `history_trash` for history.db. */
export function trashMessages(tx: WriteTx, where: string, params: readonly SqlParamInput[]): number {
  tx.run(`INSERT OR IGNORE INTO history_trash (body_key) SELECT body_key FROM messages WHERE ${where} AND body_key IS NOT NULL`, params);
  return tx.run(`DELETE FROM messages WHERE ${where}`, params).changes;
}
