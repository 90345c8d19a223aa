import type { AttachmentHolds } from './attachment-holds';
import type { Database, PlannedOp, WriteTx } from './database';
import { packedMap } from '../platform/packed-map';

/**
 * An uploaded file: its bytes are a blob (store.blobs, by `hash`), this row says what it is and who may
 * read it. Until a message references it (`conversation_id` set) only its uploader may use or read it.
 */
export interface AttachmentRow {
  id: string;
  /** SHA-256 of the bytes: the blob's name. */
  hash: string;
  name: string;
  mime: string;
  kind: 'image' | 'file';
  size: number;
  /** Who uploaded it (source and credential kind). */
  uploader: string;
  created_at: string;
  /** The conversation of the first message that carried it; null while none did. */
  conversation_id: string | null;
}

const COLUMNS = 'id, hash, name, mime, kind, size, uploader, created_at, conversation_id';

/** An upload no message carries yet, as its person's bound reads it. */
export type UnsentAttachment = Pick<AttachmentRow, 'id' | 'hash' | 'size'>;

/**
 * Another conversation a message of which carries an attachment bound to a first one (sent again): kept so
 * that deleting the first leaves it to the other (dropConversationAttachments), not freed under it.
 */
export const ATTACHMENT_USES_TABLE_SQL = 'CREATE TABLE attachment_uses (attachment_id TEXT NOT NULL, conversation_id TEXT NOT NULL, PRIMARY KEY (attachment_id, conversation_id))';

/**
 * Marks the attachments as carried by a message of the conversation: statements for the transaction storing
 * that message (MessagesRepo.appendMany's planned statements), known before they run. One bound to another
 * conversation already (sent again) is noted as used by this one too: so is one whose conversations were
 * all deleted while the message waited in line (held: AttachmentHolds), left to this one by the collection's
 * orphan pass (dropConversationAttachments of the deleted one).
 */
export function bindAttachments(ids: readonly string[], conversationId: string): PlannedOp[] {
  if (ids.length === 0) return [];
  const bind = packedMap(ids, (id) => ({ sql: 'UPDATE attachments SET conversation_id = ? WHERE id = ? AND conversation_id IS NULL', params: [conversationId, id] }));
  const use = packedMap(ids, (id) => ({
    sql: 'INSERT OR IGNORE INTO attachment_uses (attachment_id, conversation_id) SELECT id, ? FROM attachments WHERE id = ? AND conversation_id != ?',
    params: [conversationId, id, conversationId],
  }));
  return [...bind, ...use];
}

/**
 * Inside a conversation's deletion (trashConversation): its uses go, an attachment it carried first that
 * another conversation carries too is bound to that one, and its other attachments' rows go (their bytes
 * are freed by the next blob collection: blob-collection.ts), except those `held` (AttachmentHolds):
 * a chat waiting in another conversation's line names them, and its message binds them when stored
 * (bindAttachments). Until then no conversation carries them and no one reads them (visibleAttachment).
 * A held row left bound to a deleted conversation is what the collection's orphan pass then rebinds (or,
 * no message having carried it, drops once it is no longer held). Returns the held ids it left.
 */
export function dropConversationAttachments(tx: WriteTx, conversationId: string, held: Pick<AttachmentHolds, 'has'>): string[] {
  tx.run('DELETE FROM attachment_uses WHERE conversation_id = ?', [conversationId]);
  tx.run(
    'UPDATE attachments SET conversation_id = (SELECT min(u.conversation_id) FROM attachment_uses u WHERE u.attachment_id = attachments.id) WHERE conversation_id = ? AND id IN (SELECT attachment_id FROM attachment_uses)',
    [conversationId],
  );
  // Bound before migration 25 (`uses_unknown`): another conversation may carry it unrecorded, so it stays.
  // Of the held ids, this conversation's own (the statement's parameter, journaled with it): every held id
  // in every deletion's record made each one as big as all waiting chats' files (attack36). As one JSON
  // parameter: however many are held, no limit on SQL variables to meet.
  const kept = tx
    .all<{ id: string }>('SELECT id FROM attachments WHERE conversation_id = ? AND uses_unknown = 0', [conversationId])
    .map((row) => row.id)
    .filter((id) => held.has(id));
  tx.run('DELETE FROM attachments WHERE conversation_id = ? AND uses_unknown = 0 AND id NOT IN (SELECT value FROM json_each(?))', [conversationId, JSON.stringify(kept)]);
  return kept;
}

/** Records an attachment inside a caller's transaction (an image a tool showed, with its result). */
export function insertAttachment(tx: WriteTx, row: AttachmentRow): void {
  tx.run(`INSERT INTO attachments (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, [row.id, row.hash, row.name, row.mime, row.kind, row.size, row.uploader, row.created_at, row.conversation_id]);
}

export class AttachmentsRepo {
  constructor(
    private readonly db: Database,
    /** What chats waiting in line hold (in memory). */
    readonly holds: AttachmentHolds,
  ) {}

  /** Records a complete upload; call after its blob is durably stored. */
  async add(row: Omit<AttachmentRow, 'conversation_id'>): Promise<void> {
    await this.db.write((tx) => insertAttachment(tx, { ...row, conversation_id: null }));
  }

  get(id: string): AttachmentRow | undefined {
    return this.db.get<AttachmentRow>(`SELECT ${COLUMNS} FROM attachments WHERE id = ?`, [id]);
  }

  /**
   * The conversations whose messages carry the attachment: the first (its row's) and those it was sent again
   * in (bindAttachments); none while unsent. A deleted one may be among them until the collection's orphan pass.
   */
  carriers(id: string): string[] {
    return this.db
      .all<{ conversation_id: string }>(
        'SELECT conversation_id FROM attachments WHERE id = ? AND conversation_id IS NOT NULL UNION SELECT conversation_id FROM attachment_uses WHERE attachment_id = ?',
        [id, id],
      )
      .map((row) => row.conversation_id);
  }

  /** The person's uploads no message carries yet, newest first. */
  unsentOf(uploader: string): UnsentAttachment[] {
    return this.db.all<UnsentAttachment>('SELECT id, hash, size FROM attachments WHERE uploader = ? AND conversation_id IS NULL ORDER BY created_at DESC, rowid DESC', [uploader]);
  }

  /**
   * Forgets these uploads unless a message carries them by now; answers the hashes of their bytes (for a
   * blob collection to free those nothing else refers to: blob-refs.ts).
   */
  async dropUnsent(rows: readonly UnsentAttachment[]): Promise<string[]> {
    await this.db.write((tx) => {
      for (const { id } of rows) tx.run('DELETE FROM attachments WHERE id = ? AND conversation_id IS NULL', [id]);
    });
    return [...new Set(rows.map((row) => row.hash))];
  }
}
