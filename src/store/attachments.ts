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
 * Marks the attachments as carried by a message of the conversation: statements for the transaction storing
 * that message (MessagesRepo.appendMany's planned statements), known before they run.
 */
export function bindAttachments(ids: readonly string[], conversationId: string): PlannedOp[] {
  return packedMap(ids, (id) => ({ sql: 'UPDATE attachments SET conversation_id = ? WHERE id = ? AND conversation_id IS NULL', params: [conversationId, id] }));
}

/** Records an attachment inside a caller's transaction (an image a tool showed, with its result). */
export function insertAttachment(tx: WriteTx, row: AttachmentRow): void {
  tx.run(`INSERT INTO attachments (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, [row.id, row.hash, row.name, row.mime, row.kind, row.size, row.uploader, row.created_at, row.conversation_id]);
}

export class AttachmentsRepo {
  constructor(private readonly db: Database) {}

  /** Records a complete upload; call after its blob is durably stored. */
  async add(row: Omit<AttachmentRow, 'conversation_id'>): Promise<void> {
    await this.db.write((tx) => insertAttachment(tx, { ...row, conversation_id: null }));
  }

  get(id: string): AttachmentRow | undefined {
    return this.db.get<AttachmentRow>(`SELECT ${COLUMNS} FROM attachments WHERE id = ?`, [id]);
  }

  /** The person's uploads no message carries yet, newest first. */
  unsentOf(uploader: string): UnsentAttachment[] {
    return this.db.all<UnsentAttachment>('SELECT id, hash, size FROM attachments WHERE uploader = ? AND conversation_id IS NULL ORDER BY created_at DESC, rowid DESC', [uploader]);
  }

  /**
   * Forgets these uploads unless a message carries them by now; answers the hashes of their bytes that
   * nothing stored refers to any more (another attachment, a turn's before- or after-image of a file).
   */
  async dropUnsent(rows: readonly UnsentAttachment[]): Promise<string[]> {
    await this.db.write((tx) => {
      for (const { id } of rows) tx.run('DELETE FROM attachments WHERE id = ? AND conversation_id IS NULL', [id]);
    });
    return [...new Set(rows.map((row) => row.hash))].filter((hash) => !this.referenced(hash));
  }

  private referenced(hash: string): boolean {
    const sql = 'SELECT 1 AS found FROM attachments WHERE hash = ? UNION ALL SELECT 1 FROM file_changes WHERE before_hash = ? OR after_hash = ? LIMIT 1';
    return this.db.get(sql, [hash, hash, hash]) !== undefined;
  }
}
